//! JIT attribution while converting: code outside any file mapping in a process that
//! wrote a perf map — or mapped a jitdump file (`jit-PID.dump`, written by runtimes for
//! `perf inject --jit`: node --perf-prof, the JVM's agent, CPython -X perf_jit) — is
//! attributed to that file: its frames become (file object, address), named from it,
//! and the symbols of every sampled JIT address are kept in the profile (the file may
//! be gone when the profile is read).

use super::objects::Objects;
use crate::profile::format::{FrameRef, JitSymbol, Profile, Space};
use crate::profile::jitmap::{self, JitMap};
use std::collections::{BTreeMap, HashMap};

#[derive(Default)]
pub(crate) struct JitObjects {
    /// Per pid: the perf map and its object index, None when the process has none.
    maps: HashMap<u32, Option<(JitMap, u32)>>,
}

/// Is `path` a jitdump file (`…/jit-PID.dump`)? Samples attributed to one are JIT code.
pub(crate) fn is_jitdump_path(path: &str) -> bool {
    crate::profile::symbolize::basename(path)
        .strip_prefix("jit-")
        .and_then(|rest| rest.strip_suffix(".dump"))
        .is_some_and(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
}

/// Whether an object of a profile holds JIT code names (a perf map or a jitdump file).
pub fn is_jit_object(path: &str) -> bool {
    jitmap::is_map_path(path) || is_jitdump_path(path)
}

/// The code a jitdump file says was loaded (and moved) by the end of the file, as a map
/// of code ranges; None when it cannot be read.
fn read_jitdump(path: &str) -> Option<JitMap> {
    use linux_perf_data::jitdump::{JitDumpReader, JitDumpRecord};
    let file = std::fs::File::open(path).ok()?;
    let mut reader = JitDumpReader::new(std::io::BufReader::new(file)).ok()?;
    let mut map = JitMap::default();
    // Moves refer to code by its old address: keep each loaded range's name by start.
    let mut names: HashMap<u64, (u64, String)> = HashMap::new();
    while let Ok(Some(raw)) = reader.next_record() {
        match raw.parse() {
            Ok(JitDumpRecord::CodeLoad(load)) => {
                let name = String::from_utf8_lossy(&load.function_name.as_slice()).into_owned();
                let size = load.code_bytes.len() as u64;
                map.insert(load.code_addr, load.code_addr.saturating_add(size), name.clone());
                names.insert(load.code_addr, (size, name));
            }
            Ok(JitDumpRecord::CodeMove(moved)) => {
                if let Some((size, name)) = names.remove(&moved.old_code_addr) {
                    map.insert(moved.new_code_addr, moved.new_code_addr.saturating_add(size), name.clone());
                    names.insert(moved.new_code_addr, (size, name));
                }
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    Some(map)
}

impl JitObjects {
    /// `pid` mapped a jitdump file: its code ranges name the process's JIT code.
    pub(crate) fn jitdump(&mut self, pid: u32, path: &str, objects: &mut Objects) {
        if let Some(map) = read_jitdump(path) {
            self.maps.insert(pid, Some((map, objects.id(path))));
        }
    }

    pub(crate) fn attribute(&mut self, pid: u32, frame: FrameRef, objects: &mut Objects) -> FrameRef {
        if frame.space != Space::Unmapped {
            return frame;
        }
        let map = self.maps.entry(pid).or_insert_with(|| {
            let map = JitMap::read(pid)?;
            let object = objects.id(&jitmap::map_path(pid).display().to_string());
            Some((map, object))
        });
        match map {
            Some((_, object)) => FrameRef { space: Space::User, object: Some(*object), offset: frame.offset },
            None => frame,
        }
    }

    /// The symbols of every sampled JIT address, each once.
    pub(crate) fn symbols(&self, profile: &Profile) -> Vec<JitSymbol> {
        let by_object: HashMap<u32, &JitMap> = self.maps.values().flatten().map(|(map, o)| (*o, map)).collect();
        let addresses = profile
            .samples
            .iter()
            .map(|s| (s.object, s.offset))
            .chain(profile.frames.iter().map(|f| (f.object, f.offset)));
        let mut symbols: BTreeMap<(u32, u64), JitSymbol> = BTreeMap::new();
        for (object, address) in addresses {
            let Some((object, map)) = object.and_then(|o| Some((o, *by_object.get(&o)?))) else { continue };
            if let Some((start, size, name)) = map.lookup(address) {
                symbols.entry((object, start)).or_insert_with(|| JitSymbol {
                    object,
                    start,
                    size,
                    name: name.to_string(),
                });
            }
        }
        symbols.into_values().collect()
    }
}
