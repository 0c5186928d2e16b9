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

    /// The key of a layout built by `build` (seed substituted) into `program`.
    pub fn key(&self, build: &str, program: &Path) -> String {
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
            let Some(top) = git(&dir, &["rev-parse", "--show-toplevel"]) else { continue };
            if seen.contains(&top) {
                continue;
            }
            for args in [&["rev-parse", "HEAD"][..], &["diff", "HEAD"]] {
                part("git", git(&dir, args).unwrap_or_default().as_bytes());
            }
            // Untracked files by content: `git diff HEAD` does not show them.
            for name in git(&dir, &["ls-files", "--others", "--exclude-standard"]).unwrap_or_default().lines() {
                // `ls-files` names them from `dir`, where git ran.
                if let Some(digest) = self.digest(&dir.join(name)) {
                    part("untracked", name.as_bytes());
                    part("content", &digest);
                }
            }
            seen.push(top);
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
        let key = cache.key(&build(7), &program);
        assert_eq!(key, cache.key(&build(7), &program), "the same inputs, the same key");
        assert_ne!(key, cache.key(&build(8), &program), "another seed");
        // A longer source: another size, so the memo of digests sees the change whatever
        // the file system's time resolution.
        std::fs::write(&source, "int main(){return 10;}").unwrap();
        assert_ne!(key, cache.key(&build(7), &program), "the named source changed");
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
}
