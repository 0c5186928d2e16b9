//! The cache of built code layouts (`compare --layouts`, `--build`): a layout's program,
//! once built, is kept under a key of its build inputs and copied back the next time the
//! same layout of the same inputs is asked for, instead of being rebuilt
//! (docs/suites.md, "The layout cache").
//!
//! No crate caches a build's output by its inputs without owning the build (sccache and
//! ccache wrap the compiler; here the build is any shell command), so this is by hand.
//! The key is a SHA-256 of what can be known about the inputs without running the build:
//! the build command with its seed, the program's path, the working directory, the git
//! commit, uncommitted diff and untracked files of the repositories of the working
//! directory and of every directory the command names, and the content of every file it
//! names. A build that reads files it does not name, outside a git repository, is not
//! seen: `--no-layout-cache`, or clear the cache.
//!
//! The repositories are read once per comparison (the first key that names them): the
//! builds of one comparison write their outputs as they go, and a layout's key must not
//! depend on which layouts were built before it. Untracked files that are layouts'
//! programs (any seed in the place of the program's own) are no inputs: the programs a
//! previous comparison left in a repository do not change the next one's keys. Other
//! outputs a build leaves untracked in a repository do (ignore them in `.gitignore`).

use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::SystemTime;

/// Where cached layouts live: `$PERFLAB_LAYOUT_CACHE`, else `$XDG_CACHE_HOME/perflab/layouts`,
/// else `~/.cache/perflab/layouts`; None when none of these can be formed.
pub fn default_dir() -> Option<PathBuf> {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
    var("PERFLAB_LAYOUT_CACHE").or_else(|| {
        var("XDG_CACHE_HOME")
            .or_else(|| var("HOME").map(|h| h.join(".cache")))
            .map(|c| c.join("perflab").join("layouts"))
    })
}

/// The cache, or none (`--no-layout-cache`, or no directory for it).
#[derive(Debug, Default)]
pub struct LayoutCache {
    dir: Option<PathBuf>,
    /// Content hashes of the files keys named, by path, size and modification time: every
    /// layout of a version names the same object files (an 8 MB `sqlite3.o` per key).
    digests: Mutex<HashMap<PathBuf, (u64, Option<SystemTime>, Vec<u8>)>>,
    /// Each directory's repository, read once (see the module's doc); None outside one.
    repositories: Mutex<HashMap<PathBuf, Option<Repository>>>,
}

/// What the key takes from a git repository.
#[derive(Debug, Clone)]
struct Repository {
    top: String,
    head: String,
    diff: String,
    /// Untracked files as `ls-files` names them from the directory asked.
    untracked: Vec<String>,
}

/// A layout's program path with the seed cut out: `prefix` SEED `suffix`. A path is one
/// of the layouts' programs when it has digits between them, or, when the seed names a
/// directory (`out/v3-{layout}/prog`), lies anywhere in such a directory.
#[derive(Debug, Clone, PartialEq)]
pub struct ProgramPattern {
    prefix: String,
    suffix: String,
}

impl ProgramPattern {
    /// The pattern of `program`, the seed `seed` in its path; None when the path does not
    /// hold the seed.
    pub fn of(program: &Path, seed: u64) -> Option<ProgramPattern> {
        let text = absolute(program).to_string_lossy().into_owned();
        let seed = seed.to_string();
        let at = text.rfind(&seed)?;
        Some(ProgramPattern { prefix: text[..at].to_string(), suffix: text[at + seed.len()..].to_string() })
    }

    fn matches(&self, path: &Path) -> bool {
        let text = absolute(path).to_string_lossy().into_owned();
        let Some(rest) = text.strip_prefix(&self.prefix) else { return false };
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return false;
        }
        let rest = &rest[digits..];
        let own_file = rest == self.suffix || rest.strip_prefix(self.suffix.as_str()) == Some(".perflab-cache-partial");
        own_file || (self.suffix.starts_with('/') && rest.starts_with('/'))
    }
}

impl LayoutCache {
    /// The cache at [`default_dir`], or a disabled one.
    pub fn open(disabled: bool) -> LayoutCache {
        LayoutCache { dir: if disabled { None } else { default_dir() }, ..LayoutCache::default() }
    }

    /// SHA-256 of a file's content, computed once per size and modification time.
    fn digest(&self, path: &Path) -> Option<Vec<u8>> {
        let meta = std::fs::metadata(path).ok()?;
        let stamp = (meta.len(), meta.modified().ok());
        let mut memo = self.digests.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((len, modified, digest)) = memo.get(path) {
            if (*len, *modified) == stamp {
                return Some(digest.clone());
            }
        }
        let digest = Sha256::digest(std::fs::read(path).ok()?).to_vec();
        memo.insert(path.to_path_buf(), (stamp.0, stamp.1, digest.clone()));
        Some(digest)
    }

    /// Whether layouts are cached at all (`--no-layout-cache` turns it off): no key is
    /// computed otherwise.
    pub fn enabled(&self) -> bool {
        self.dir.is_some()
    }

    /// The repository of `dir`, read once.
    fn repository(&self, dir: &Path) -> Option<Repository> {
        let mut memo = self.repositories.lock().unwrap_or_else(|e| e.into_inner());
        memo.entry(dir.to_path_buf())
            .or_insert_with(|| {
                let top = git(dir, &["rev-parse", "--show-toplevel"])?;
                Some(Repository {
                    top,
                    head: git(dir, &["rev-parse", "HEAD"]).unwrap_or_default(),
                    diff: git(dir, &["diff", "HEAD"]).unwrap_or_default(),
                    untracked: git(dir, &["ls-files", "--others", "--exclude-standard"])
                        .unwrap_or_default()
                        .lines()
                        .map(String::from)
                        .collect(),
                })
            })
            .clone()
    }

    /// The key of a layout built by `build` (seed substituted) into `program`; untracked
    /// files matching `programs` (the layouts' programs) are not inputs.
    pub fn key(&self, build: &str, program: &Path, programs: &[ProgramPattern]) -> String {
        let mut hash = Sha256::new();
        let mut part = |label: &str, bytes: &[u8]| {
            hash.update(label.as_bytes());
            hash.update((bytes.len() as u64).to_le_bytes());
            hash.update(bytes);
        };
        part("build", build.as_bytes());
        part("program", absolute(program).to_string_lossy().as_bytes());
        let cwd = std::env::current_dir().unwrap_or_default();
        part("cwd", cwd.to_string_lossy().as_bytes());
        let mut repositories = vec![cwd.clone()];
        let words = shell_words::split(build).unwrap_or_else(|_| build.split_whitespace().map(String::from).collect());
        for word in words {
            // `-Wl,--script=x.ld`, `SRC=a.c`: the path after `=` too.
            for candidate in [Some(word.as_str()), word.split_once('=').map(|(_, p)| p)].into_iter().flatten() {
                let path = Path::new(candidate);
                if candidate.is_empty() || path == program {
                    continue;
                }
                if path.is_file() {
                    if let Some(digest) = self.digest(path) {
                        part("file", absolute(path).to_string_lossy().as_bytes());
                        part("content", &digest);
                    }
                } else if path.is_dir() {
                    repositories.push(path.to_path_buf());
                }
            }
        }
        let mut seen = Vec::new();
        for dir in repositories {
            let Some(repository) = self.repository(&dir) else { continue };
            if seen.contains(&repository.top) {
                continue;
            }
            part("git", repository.head.as_bytes());
            part("git", repository.diff.as_bytes());
            // Untracked files by content: `git diff HEAD` does not show them.
            for name in &repository.untracked {
                // `ls-files` names them from `dir`, where git ran.
                let path = dir.join(name);
                if programs.iter().any(|p| p.matches(&path)) {
                    continue;
                }
                if let Some(digest) = self.digest(&path) {
                    part("untracked", name.as_bytes());
                    part("content", &digest);
                }
            }
            seen.push(repository.top);
        }
        hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Put the cached program of `key` at `program`; false when there is none (or the
    /// cache is disabled, or the copy failed: then the layout is built).
    pub fn restore(&self, key: &str, program: &Path) -> bool {
        let Some(dir) = &self.dir else { return false };
        let cached = dir.join(key);
        if !cached.is_file() {
            return false;
        }
        if let Some(parent) = program.parent().filter(|p| !p.as_os_str().is_empty()) {
            if std::fs::create_dir_all(parent).is_err() {
                return false;
            }
        }
        // Written beside and renamed: a program being run is never half copied.
        let partial = program.with_extension("perflab-cache-partial");
        let copied = std::fs::copy(&cached, &partial).is_ok() && std::fs::rename(&partial, program).is_ok();
        if !copied {
            let _ = std::fs::remove_file(&partial);
        }
        copied
    }

    /// Keep `program` under `key`; a failure is said (the layout was built all the same).
    pub fn store(&self, key: &str, program: &Path) {
        let Some(dir) = &self.dir else { return };
        let kept = std::fs::create_dir_all(dir).and_then(|_| {
            let partial = dir.join(format!("{key}.partial-{}", std::process::id()));
            std::fs::copy(program, &partial)?;
            std::fs::rename(&partial, dir.join(key))
        });
        if let Err(e) = kept {
            eprintln!(
                "perflab: note: the layout {} is not cached ({}: {e})",
                perflab_render::terminal::escape(&program.to_string_lossy()),
                perflab_render::terminal::escape(&dir.to_string_lossy())
            );
        }
    }

    /// The directory, when the cache is on.
    pub fn dir(&self) -> Option<&Path> {
        self.dir.as_deref()
    }
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// `git ARGS` in `dir`, its output; None outside a repository or without git.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out =
        Command::new("git").arg("-C").arg(dir).args(args).stdin(Stdio::null()).stderr(Stdio::null()).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_follows_the_command_and_the_content_of_the_files_it_names() {
        let dir = std::env::temp_dir().join(format!("perflab-layout-cache-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let source = dir.join("loop.c");
        std::fs::write(&source, "int main(){return 0;}").unwrap();
        let program = dir.join("out-7");
        let build = |seed: u32| format!("cc -o {} {} -Wl,--seed={seed}", program.display(), source.display());
        let cache = LayoutCache { dir: Some(dir.join("cache")), ..LayoutCache::default() };
        let key = cache.key(&build(7), &program, &[]);
        assert_eq!(key, cache.key(&build(7), &program, &[]), "the same inputs, the same key");
        assert_ne!(key, cache.key(&build(8), &program, &[]), "another seed");
        // A longer source: another size, so the memo of digests sees the change whatever
        // the file system's time resolution.
        std::fs::write(&source, "int main(){return 10;}").unwrap();
        assert_ne!(key, cache.key(&build(7), &program, &[]), "the named source changed");
        // Stored and restored: the program comes back byte for byte.
        std::fs::write(&program, b"\x7fELF layout 7").unwrap();
        cache.store(&key, &program);
        std::fs::remove_file(&program).unwrap();
        assert!(cache.restore(&key, &program));
        assert_eq!(std::fs::read(&program).unwrap(), b"\x7fELF layout 7");
        assert!(!cache.restore("0000", &program), "an unknown key");
        assert!(!LayoutCache::default().restore(&key, &program), "disabled");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// In a git repository, the programs a comparison left behind (untracked) are not
    /// inputs of the next one's keys; another untracked file is.
    #[test]
    fn layout_programs_left_in_a_repository_do_not_change_the_keys() {
        let dir = std::env::temp_dir().join(format!("perflab-layout-cache-repo-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("out")).unwrap();
        let ok = Command::new("git").arg("-C").arg(&dir).args(["init", "-q"]).status().is_ok_and(|s| s.success());
        if !ok {
            // Skipped, said and counted as tests/common/skip.rs does (scripts/test's summary).
            let reason = "git is not installed";
            assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true: {reason}");
            eprintln!("SKIPPED: {reason}");
            if let Some(path) = std::env::var_os("PERFLAB_TEST_SKIPS") {
                use std::io::Write;
                let line = format!(
                    "perflab::cli::layout_cache::tests::layout_programs_left_in_a_repository_do_not_change_the_keys\twhole\t{reason}\n"
                );
                let file = std::fs::OpenOptions::new().create(true).append(true).open(path);
                file.and_then(|mut f| f.write_all(line.as_bytes())).expect("append to PERFLAB_TEST_SKIPS");
            }
            return;
        }
        let source = dir.join("loop.c");
        std::fs::write(&source, "int main(){return 0;}").unwrap();
        let program = |version: &str, seed: u64| dir.join(format!("out/{version}-{seed}/prog"));
        // The repository is read because the command names its directory.
        let build = |version: &str, seed: u64| {
            format!("cd {} && cc -o {} loop.c -Wl,--seed={seed}", dir.display(), program(version, seed).display())
        };
        let patterns: Vec<ProgramPattern> =
            [("a", 7), ("b", 3)].iter().filter_map(|&(v, s)| ProgramPattern::of(&program(v, s), s)).collect();
        assert_eq!(patterns.len(), 2);
        let key = |cache: &LayoutCache| cache.key(&build("a", 7), &program("a", 7), &patterns);
        let first = key(&LayoutCache::default());
        // A previous comparison's layouts (other seeds, both versions, a partial copy).
        for (version, seed) in [("a", 11), ("a", 12), ("b", 40)] {
            let p = program(version, seed);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, format!("layout {seed}")).unwrap();
            std::fs::write(p.with_extension("perflab-cache-partial"), "half").unwrap();
        }
        assert_eq!(first, key(&LayoutCache::default()), "the layouts left behind are no inputs");
        std::fs::write(dir.join("helper.c"), "int helper;").unwrap();
        let cache = LayoutCache::default();
        let with_source = key(&cache);
        assert_ne!(first, with_source, "an untracked source is an input");
        // Read once per cache: a file written after its first key does not move its keys.
        std::fs::write(dir.join("later.c"), "int later;").unwrap();
        assert_eq!(with_source, key(&cache));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
