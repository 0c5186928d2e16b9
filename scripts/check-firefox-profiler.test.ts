/* Evaluation test run by scripts/check-firefox-profiler inside a checkout of the
 * Firefox Profiler (copied to src/test/perflab-export.test.ts there): it loads
 * perflab's --firefox exports through the profiler's own code (the file-drop path
 * unserializeProfileOfArbitraryFormat with its processed-profile upgraders, the
 * Redux store the web app builds, its call tree, and the bottom box's source and
 * assembly view selection) and compares what the profiler reads with what perflab
 * itself reported for the same profile. It is not part of perflab's test suite:
 * CI has no copy of the profiler's repository.
 *
 * Input: PERFLAB_FFP_MANIFEST, a JSON list of cases { name, file, perflab: <perflab
 *   show --json of the same profile>, weight: "samples" | "period" (what the file's
 *   weights sum to), weightType: "samples" | "bytes" (what the file must call them) }
 * Output: PERFLAB_FFP_REPORT gets one "PASS name" / "FAIL name: why" line per case
 * and PERFLAB_FFP_REPORT.log what the loader read (call tree, functions, libs, views). */

import * as fs from 'fs';
import { execFileSync } from 'child_process';
import { unserializeProfileOfArbitraryFormat } from '../profile-logic/process-profile';
import { PROCESSED_PROFILE_VERSION } from '../app-logic/constants';
import { storeWithProfile } from './fixtures/stores';
import { formatTree } from './fixtures/utils';
import { getThreadSelectors } from '../selectors/per-thread';
import {
  changeSelectedThreads,
  updateBottomBoxContentsAndMaybeOpen,
} from '../actions/profile-view';
import { getBottomBoxInfoForCallNode } from '../profile-logic/bottom-box';
import * as ProfileSelectors from '../selectors/profile';
import * as UrlStateSelectors from '../selectors/url-state';
import { getIsAssemblyViewAvailable } from '../selectors/code';

type PerflabRow = { name: string; object: string; self_samples: number; self_period: number };
type Case = {
  name: string;
  file: string;
  weight: 'samples' | 'period';
  weightType?: 'samples' | 'bytes';
  perflab: {
    samples: number;
    period: number;
    weight: string;
    functions: PerflabRow[];
    lines?: PerflabRow[];
  };
};

const manifestPath = process.env.PERFLAB_FFP_MANIFEST;
const reportPath = process.env.PERFLAB_FFP_REPORT;
const cases: Case[] = manifestPath
  ? JSON.parse(fs.readFileSync(manifestPath, 'utf8'))
  : [];

function run(cmd: string, args: string[]): string {
  try {
    return execFileSync(cmd, args, {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      maxBuffer: 1 << 30,
    });
  } catch (_e) {
    return '';
  }
}

function buildId(path: string): string | null {
  const m = /Build ID: ([0-9a-f]+)/.exec(run('readelf', ['-nW', path]));
  return m ? m[1] : null;
}

// The address libs' relative addresses count from, as the symbol server API
// (samply's wholesym) takes it: the vaddr of the PT_LOAD that maps file offset 0.
function imageBase(path: string): number {
  for (const line of run('readelf', ['-lW', path]).split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f[0] === 'LOAD' && parseInt(f[1], 16) === 0) {
      return parseInt(f[2], 16);
    }
  }
  return 0;
}

// ELF symbol name -> its addresses (symtab and dynsym; a versioned name such as
// realpath@@GLIBC_2.3 and realpath@GLIBC_2.2.5 has one per version).
function elfSymbols(path: string): Map<string, Set<number>> {
  const symbols = new Map<string, Set<number>>();
  // perflab names C++ and Rust functions demangled: nm -C names them the same way.
  for (const args of [['-C', '--defined-only', path], ['-C', '-D', '--defined-only', path]]) {
    for (const line of run('nm', args).split('\n')) {
      const f = /^([0-9a-f]+) ([tTwWiI]) (.+)$/.exec(line.trim());
      if (f) {
        const name = f[3].replace(/@@?[A-Z][A-Za-z0-9_.]*$/, '');
        // perflab names a GCC clone (int_bn_mod_inverse.part.0, f(int) [clone
        // .cold]) after its function: the address must be one of either name's.
        const unsuffixed = name
          .replace(/( \[clone \.[a-z_]+(\.\d+)?\])+$/, '')
          .replace(/(\.(part|cold|isra|constprop|lto_priv)(\.\d+)?)+$/, '');
        for (const key of new Set([name, unsuffixed])) {
          if (!symbols.has(key)) {
            symbols.set(key, new Set());
          }
          symbols.get(key)!.add(parseInt(f[1], 16));
        }
      }
    }
  }
  return symbols;
}

function add<K>(map: Map<K, number>, key: K, value: number) {
  map.set(key, (map.get(key) ?? 0) + value);
}

describe('perflab --firefox exports in the Firefox Profiler', function () {
  if (cases.length === 0) {
    it('has a manifest', function () {
      expect(manifestPath).toBeDefined();
    });
  }
  for (const c of cases) {
    it(c.name, async function () {
      const problems: string[] = [];
      const log: string[] = [`=== ${c.name}: ${c.file}`];
      try {
        const bytes = fs.readFileSync(c.file);
        const fromVersion = JSON.parse(bytes.toString('utf8')).meta
          ?.preprocessedProfileVersion;
        // The file-drop path: the bytes as an ArrayBuffer.
        const buffer = bytes.buffer.slice(
          bytes.byteOffset,
          bytes.byteOffset + bytes.byteLength
        );
        const profile = await unserializeProfileOfArbitraryFormat(buffer);
        log.push(
          `loaded: processed-profile version ${fromVersion} upgraded to ${profile.meta.preprocessedProfileVersion} (current ${PROCESSED_PROFILE_VERSION})`
        );
        if (profile.meta.preprocessedProfileVersion !== PROCESSED_PROFILE_VERSION) {
          problems.push('not upgraded to the current version');
        }
        const store = storeWithProfile(profile);
        const { shared } = profile;
        const strings = shared.stringArray;
        const funcFile = (func: number): string | null => {
          const source = shared.funcTable.source[func];
          return source === null ? null : strings[shared.sources.filename[source]];
        };

        // Libraries: path, build ID as the file on disk has it.
        profile.libs.forEach((lib, i) => {
          const onDisk = buildId(lib.path);
          log.push(
            `lib ${i}: ${lib.path} debugName=${lib.debugName} breakpadId=${lib.breakpadId} codeId=${lib.codeId}${onDisk === lib.codeId ? ' (= readelf build ID)' : ` (readelf: ${onDisk})`}`
          );
          if (onDisk !== null && onDisk !== lib.codeId) {
            problems.push(`lib ${lib.path}: codeId ${lib.codeId} is not its build ID ${onDisk}`);
          }
        });

        // Native symbols: each at the address nm gives the symbol, relative to the image base.
        const symbolsOf = new Map<number, Map<string, Set<number>>>();
        let symbolsChecked = 0;
        const notInNm: string[] = [];
        for (let s = 0; s < shared.nativeSymbols.length; s++) {
          const libIndex = shared.nativeSymbols.libIndex[s];
          const lib = profile.libs[libIndex];
          const name = strings[shared.nativeSymbols.name[s]];
          const address = shared.nativeSymbols.address[s];
          if (!symbolsOf.has(libIndex)) {
            // A stripped library's names are in its debug file, where perflab reads them.
            const symbols = elfSymbols(lib.path);
            const debugFile = lib.codeId
              ? `/usr/lib/debug/.build-id/${lib.codeId.slice(0, 2)}/${lib.codeId.slice(2)}.debug`
              : null;
            if (debugFile && fs.existsSync(debugFile)) {
              for (const [name, addresses] of elfSymbols(debugFile)) {
                const known = symbols.get(name) ?? new Set<number>();
                addresses.forEach((a) => known.add(a));
                symbols.set(name, known);
              }
            }
            symbolsOf.set(libIndex, symbols);
          }
          const svmas = symbolsOf.get(libIndex)!.get(name);
          if (svmas === undefined) {
            notInNm.push(`${name} [${lib.name}]`);
            continue;
          }
          symbolsChecked++;
          const base = imageBase(lib.path);
          const expected = [...svmas].map((svma) => svma - base);
          if (!expected.includes(address)) {
            problems.push(
              `native symbol ${name} in ${lib.name} at 0x${address.toString(16)}, nm says ${expected.map((a) => `0x${a.toString(16)}`).join(' or ')}`
            );
          }
        }
        log.push(
          `nativeSymbols: ${shared.nativeSymbols.length}, ${symbolsChecked} found by nm and compared; not in nm: ${notInNm.slice(0, 5).join(', ')}${notInNm.length > 5 ? ', …' : ''}`
        );

        // Frames with an address: in a library, inside their native symbol.
        const frames = shared.frameTable;
        let addressed = 0;
        for (let f = 0; f < frames.length; f++) {
          const address = frames.address[f];
          if (address < 0) {
            continue;
          }
          addressed++;
          const func = frames.func[f];
          // Since processed-profile version 70 a frame names its library.
          const lib = frames.lib[f] === -1 ? null : frames.lib[f];
          const symbol = frames.nativeSymbol[f];
          const name = strings[shared.funcTable.name[func]];
          if (lib === null || lib === undefined) {
            problems.push(`frame of ${name} at 0x${address.toString(16)} has no library`);
          } else if (symbol === null) {
            problems.push(`frame of ${name} at 0x${address.toString(16)} has no native symbol`);
          } else {
            const start = shared.nativeSymbols.address[symbol];
            const size = shared.nativeSymbols.functionSize[symbol];
            if (
              shared.nativeSymbols.libIndex[symbol] !== lib ||
              address < start ||
              (size !== null && address >= start + size)
            ) {
              problems.push(
                `frame of ${name} at 0x${address.toString(16)} is outside its native symbol ${strings[shared.nativeSymbols.name[symbol]]} at 0x${start.toString(16)}+${size}`
              );
            }
          }
        }
        log.push(`frames: ${frames.length}, ${addressed} with a library address`);

        // Samples, weights, self time per function and per source line, call trees.
        let samples = 0;
        let weight = 0;
        let cpuMicros = 0;
        const selfByFunc = new Map<string, number>();
        const selfByLine = new Map<string, number>();
        const selfOf = (r: PerflabRow) => (c.weight === 'period' ? r.self_period : r.self_samples);
        const hottest = c.perflab.functions
          .filter((f) => selfOf(f) > 0 && !f.object.startsWith('['))
          .sort((a, b) => selfOf(b) - selfOf(a))[0];
        const weightTypes = new Set<string>();
        let hotNode: { thread: number; node: number; count: number } | null = null;
        // Self weight per function of the leaf frame (an inlined function's own).
        const leafSelf = new Map<number, number>();
        for (let t = 0; t < profile.threads.length; t++) {
          store.dispatch(changeSelectedThreads(new Set([t])));
          const selectors = getThreadSelectors(t);
          const state = store.getState();
          const thread = selectors.getThread(state);
          const raw = profile.threads[t];
          samples += thread.samples.length;
          const w = raw.samples.weight;
          weightTypes.add(raw.samples.weightType ?? 'samples');
          weight += w ? w.reduce((a, b) => a + b, 0) : raw.samples.length;
          cpuMicros += (raw.samples.threadCPUDelta ?? []).reduce<number>(
            (a, b) => a + (b ?? 0),
            0
          );
          const callNodeInfo = selectors.getCallNodeInfo(state);
          const stackToNode = callNodeInfo.getStackIndexToNonInvertedCallNodeIndex();
          const hotCount = new Map<number, number>();
          for (let i = 0; i < thread.samples.length; i++) {
            const stack = thread.samples.stack[i];
            if (stack === null) {
              continue;
            }
            const sampleWeight = w ? w[i] : 1;
            const frame = thread.stackTable.frame[stack];
            const line = thread.frameTable.line[frame];
            const file = funcFile(thread.frameTable.func[frame]);
            if (file !== null && line !== null) {
              add(selfByLine, `${file}:${line}`, sampleWeight);
            }
            // perflab's function table gives a function inlined at an address to the
            // function it was inlined into (the frame at inline depth 0 there).
            let physical = stack;
            while (
              thread.frameTable.inlineDepth[thread.stackTable.frame[physical]] > 0 &&
              thread.stackTable.prefix[physical] !== null
            ) {
              physical = thread.stackTable.prefix[physical]!;
            }
            const func = thread.frameTable.func[thread.stackTable.frame[physical]];
            const name = strings[shared.funcTable.name[func]];
            add(selfByFunc, name, sampleWeight);
            // The leaf call node (an inlined function's, if one is inlined there) of
            // code in a library: what a double-click on the hottest self row opens.
            if (thread.frameTable.address[frame] >= 0) {
              add(hotCount, stackToNode[stack], sampleWeight);
            }
            add(leafSelf, thread.frameTable.func[frame], sampleWeight);
          }
          for (const [node, count] of hotCount) {
            if (!hotNode || count > hotNode.count) {
              hotNode = { thread: t, node, count };
            }
          }
          const tree = formatTree(selectors.getCallTree(state));
          log.push(`thread ${t} ${raw.name} (pid ${raw.pid} tid ${raw.tid}): ${thread.samples.length} samples; call tree:`);
          log.push(...tree.slice(0, 25).map((l) => `  ${l}`));
          if (tree.length > 25) {
            log.push(`  … ${tree.length - 25} more call nodes`);
          }
        }
        const expectedWeight = c.weight === 'period' ? c.perflab.period : c.perflab.samples;
        log.push(
          `samples ${samples} (perflab ${c.perflab.samples}${samples !== c.perflab.samples ? '; a weighted sample per stack' : ''}), weight total ${weight} (perflab's ${c.weight} ${expectedWeight}), threadCPUDelta total ${cpuMicros} µs (perflab period ${c.perflab.period}${c.perflab.weight === 'time' ? ' ns' : c.weightType === 'bytes' ? ' bytes' : ' events'})`
        );
        // A profile with a timeline has a sample per sample; one without (allocation
        // profiles: calls aggregated per call stack) a weighted sample per stack.
        if (c.weight === 'samples' && samples !== c.perflab.samples) {
          problems.push(`${samples} samples, perflab says ${c.perflab.samples}`);
        }
        const wantType = c.weightType ?? 'samples';
        log.push(`samples' weightType: ${[...weightTypes].join(', ')} (expected ${wantType})`);
        if ([...weightTypes].some((t) => t !== wantType)) {
          problems.push(`weightType ${[...weightTypes].join(', ')}, expected ${wantType}`);
        }
        if (weight !== expectedWeight) {
          problems.push(`weight total ${weight}, perflab says ${expectedWeight}`);
        }
        if (c.perflab.weight === 'time' && Math.abs(cpuMicros * 1000 - c.perflab.period) > 1000 * samples) {
          problems.push(`CPU time ${cpuMicros} µs, perflab says ${c.perflab.period} ns`);
        }
        // perflab's functions and lines, by self weight.
        for (const f of c.perflab.functions.filter((f) => selfOf(f) > 0)) {
          const firefoxName = [f.name, `${f.name} [${f.object}]`].find((n) => selfByFunc.has(n));
          const got = firefoxName === undefined ? 0 : selfByFunc.get(firefoxName);
          if (got !== selfOf(f)) {
            problems.push(`self of ${f.name} [${f.object}]: ${got}, perflab says ${selfOf(f)}`);
          }
        }
        // Lines perflab knows ("file:line"; not "name (no line info)").
        const knownLines = (c.perflab.lines ?? []).filter((l) => /:\d+$/.test(l.name));
        for (const l of knownLines.filter((l) => selfOf(l) > 0)) {
          const got = selfByLine.get(l.name) ?? 0;
          if (got !== selfOf(l)) {
            problems.push(`self at line ${l.name}: ${got}, perflab says ${selfOf(l)}`);
          }
        }
        log.push(
          `self by function (inlined frames to their function): ${[...selfByFunc].sort((a, b) => b[1] - a[1]).slice(0, 8).map(([n, v]) => `${n}=${v}`).join(', ')}`
        );
        log.push(
          `self by line: ${[...selfByLine].sort((a, b) => b[1] - a[1]).slice(0, 6).map(([n, v]) => `${n}=${v}`).join(', ')}`
        );

        // The function table: names with file, start line and library.
        const libOfFunc = new Map<number, number>();
        for (let f = 0; f < frames.length; f++) {
          if (frames.lib[f] !== -1) {
            libOfFunc.set(frames.func[f], frames.lib[f]);
          }
        }
        for (let func = 0; func < shared.funcTable.length; func++) {
          const lib = profile.libs[libOfFunc.get(func) ?? -1];
          log.push(
            `func ${func}: ${strings[shared.funcTable.name[func]]} file=${funcFile(func)} line=${shared.funcTable.lineNumber[func]} lib=${lib ? lib.name : '-'}`
          );
        }

        // Double-click the call node with the most self weight in a library's code, as
        // one does in the call tree.
        if (hottest) {
          if (!hotNode) {
            problems.push('no call node in a library');
          } else {
            const leafFunc = getThreadSelectors(hotNode.thread)
              .getCallNodeInfo(store.getState())
              .funcForNode(hotNode.node);
            const leafName = strings[shared.funcTable.name[leafFunc]];
            store.dispatch(changeSelectedThreads(new Set([hotNode.thread])));
            const selectors = getThreadSelectors(hotNode.thread);
            const state = store.getState();
            const thread = selectors.getFilteredThread(state);
            const info = getBottomBoxInfoForCallNode(
              hotNode.node,
              selectors.getCallNodeInfo(state),
              thread,
              selectors.getPreviewFilteredCtssSamples(state)
            );
            store.dispatch(updateBottomBoxContentsAndMaybeOpen('calltree', info));
            const after = store.getState();
            const file = ProfileSelectors.getSourceViewFile(after);
            const symbol = UrlStateSelectors.getAssemblyViewNativeSymbol(after);
            const lib = symbol ? profile.libs[symbol.libIndex] : null;
            log.push(
              `double-click ${leafName} (${hotNode.count} self): bottom box open=${UrlStateSelectors.getIsBottomBoxOpen(after)}, source view file=${file}, hottest line ${info.scrollToLineNumber}, assembly view available=${getIsAssemblyViewAvailable(after)} symbol=${symbol ? `${symbol.name}@0x${symbol.address.toString(16)} size ${symbol.functionSize}` : null}, hottest instruction ${info.scrollToInstructionAddress === undefined ? null : `0x${info.scrollToInstructionAddress.toString(16)}`}`
            );
            if (symbol) {
              // The same views opened from a URL of the web app (its url-handling).
              log.push(
                `  as the app's URL query: ?sourceViewIndex=${UrlStateSelectors.getSourceViewSourceIndex(after)}&assemblyView=${encodeURIComponent(`${symbol.libIndex}~${symbol.address.toString(16)}~${symbol.functionSize.toString(16)}${symbol.functionSizeIsKnown ? '' : '_'}~${symbol.name}`)}`
              );
            }
            if (lib && symbol) {
              log.push(
                `  the views would ask the symbol server: /source/v1 {debugName: ${lib.debugName}, debugId: ${lib.breakpadId}, file: ${file}}, /asm/v1 {debugName: ${lib.debugName}, debugId: ${lib.breakpadId}, startAddress: 0x${symbol.address.toString(16)}, size: 0x${symbol.functionSize?.toString(16)}}`
              );
            }
            const perflabHasNoLines = (c.perflab.lines ?? []).some(
              (l) => l.name === `${leafName} (no line info)`
            );
            if (file === null && !perflabHasNoLines) {
              problems.push(`source view of ${leafName} has no file`);
            }
            if (!getIsAssemblyViewAvailable(after)) {
              problems.push(`assembly view of ${leafName} is not available`);
            }
            // perflab's hottest line of the function: of its file, from the line the
            // function starts at to the next function's start there.
            const start = shared.funcTable.lineNumber[leafFunc];
            const starts = [...Array(shared.funcTable.length).keys()]
              .filter((f) => funcFile(f) === file && shared.funcTable.lineNumber[f] !== null)
              .map((f) => shared.funcTable.lineNumber[f]!);
            const end = Math.min(...starts.filter((l) => start !== null && l > start), Infinity);
            const lineOf = (l: PerflabRow) => parseInt(l.name.slice(l.name.lastIndexOf(':') + 1), 10);
            const hotLine = knownLines
              .filter(
                (l) =>
                  file !== null && start !== null && l.name.startsWith(`${file}:`) &&
                  lineOf(l) >= start && lineOf(l) < end
              )
              .sort((a, b) => selfOf(b) - selfOf(a))[0];
            // The view scrolls to the line with the most samples in the call node's
            // subtree; perflab's lines count self samples of the whole function. They
            // are the same figure when the node has no children and is all of the
            // function's self samples; lines with equal samples tie.
            const node = selectors.getCallTree(after).getNodeData(hotNode.node);
            const comparable =
              node.total === node.self && leafSelf.get(leafFunc) === hotNode.count;
            const perflabAt = knownLines.find(
              (l) => l.name === `${file}:${info.scrollToLineNumber}`
            );
            if (
              comparable &&
              hotLine &&
              (perflabAt === undefined || selfOf(perflabAt) !== selfOf(hotLine))
            ) {
              problems.push(
                `hottest line of ${leafName} is ${info.scrollToLineNumber}, perflab's hottest line in ${file} is ${hotLine.name}`
              );
            }
          }
        }
      } catch (e) {
        // What the user would see: the loader's (or the app's) error.
        problems.push(`the profiler threw: ${e instanceof Error ? e.message : String(e)}`);
      }
      fs.appendFileSync(`${reportPath}.log`, log.join('\n') + '\n');
      fs.appendFileSync(
        reportPath!,
        problems.length === 0
          ? `PASS ${c.name}\n`
          : `FAIL ${c.name}: ${problems.slice(0, 6).join('; ')}${problems.length > 6 ? `; … ${problems.length - 6} more` : ''}\n`
      );
      expect(problems).toEqual([]);
    });
  }
});
