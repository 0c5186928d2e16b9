//! Debug files from debuginfod servers, as elfutils' client fetches them: every server
//! of `DEBUGINFOD_URLS` (space-separated; Debian's profile sets
//! <https://debuginfod.debian.net>) is asked for `/buildid/HEX/debuginfo` in turn, and
//! the answer is cached where elfutils caches it (`$DEBUGINFOD_CACHE_PATH`, else
//! `$XDG_CACHE_HOME/debuginfod_client`, else `~/.cache/debuginfod_client`, as
//! `HEX/debuginfo`), so perflab, gdb and perf share one cache. A miss is cached as an
//! empty file for `cache_miss_s` seconds (elfutils' negative cache, default 600). Each
//! request gives up after `DEBUGINFOD_TIMEOUT` seconds (default 10; elfutils waits 90,
//! too long for a report). Written here on ureq: the protocol is one GET, and
//! libdebuginfod would add a C library to link against.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// Seconds a cached miss is trusted when the cache does not say (elfutils' default).
const DEFAULT_CACHE_MISS_S: u64 = 600;
/// Seconds per request when `DEBUGINFOD_TIMEOUT` is not set.
const DEFAULT_TIMEOUT_S: u64 = 10;

/// What a lookup found.
#[derive(Debug, Clone, PartialEq)]
pub enum Fetched {
    /// `DEBUGINFOD_URLS` is unset or empty.
    Disabled,
    /// Already in the cache from an earlier fetch.
    Cached(PathBuf),
    /// Just downloaded from `url` into the cache.
    Downloaded {
        /// The debug file in the cache.
        path: PathBuf,
        /// The request's full URL (`SERVER/buildid/HEX/debuginfo`).
        url: String,
    },
    /// No server has it (or a recent lookup said so).
    NotFound,
    /// The servers could not be asked: the first error.
    Failed(String),
}

/// The configuration elfutils' client reads from the environment.
#[derive(Debug, Clone)]
pub struct Config {
    /// The servers, asked in this order (`DEBUGINFOD_URLS` split at whitespace).
    pub urls: Vec<String>,
    /// The cache directory; None when no variable names one and HOME is unset (a
    /// download then cannot be kept, and fails).
    pub cache: Option<PathBuf>,
    /// How long one request may take (`DEBUGINFOD_TIMEOUT`, at least 1 s).
    pub timeout: Duration,
}

impl Config {
    /// The configuration of this process's environment.
    pub fn from_env() -> Config {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
        let urls = var("DEBUGINFOD_URLS").map_or_else(Vec::new, |v| v.split_whitespace().map(String::from).collect());
        let cache = var("DEBUGINFOD_CACHE_PATH").map(PathBuf::from).or_else(|| {
            var("XDG_CACHE_HOME")
                .map(PathBuf::from)
                .or_else(|| var("HOME").map(|h| Path::new(&h).join(".cache")))
                .map(|c| c.join("debuginfod_client"))
        });
        let timeout = var("DEBUGINFOD_TIMEOUT").and_then(|t| t.trim().parse::<u64>().ok()).unwrap_or(DEFAULT_TIMEOUT_S);
        Config { urls, cache, timeout: Duration::from_secs(timeout.max(1)) }
    }
}

/// The debug file of `build_id`, from the cache or the servers of the environment; each
/// build-id is looked up once per process.
pub fn debuginfo(build_id: &[u8]) -> Fetched {
    static DONE: Mutex<Option<HashMap<Vec<u8>, Fetched>>> = Mutex::new(None);
    let mut done = DONE.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let done = done.get_or_insert_with(HashMap::new);
    if let Some(found) = done.get(build_id) {
        // Said once: later loads of the same object reuse the file quietly.
        return match found {
            Fetched::Downloaded { path, .. } => Fetched::Cached(path.clone()),
            other => other.clone(),
        };
    }
    let found = fetch(&Config::from_env(), build_id);
    done.insert(build_id.to_vec(), found.clone());
    found
}

/// [`debuginfo`] with an explicit configuration, without the per-process memo.
pub(crate) fn fetch(config: &Config, build_id: &[u8]) -> Fetched {
    if config.urls.is_empty() || build_id.is_empty() {
        return Fetched::Disabled;
    }
    let hex: String = build_id.iter().map(|b| format!("{b:02x}")).collect();
    let cached = config.cache.as_ref().map(|c| c.join(&hex).join("debuginfo"));
    if let Some(path) = &cached {
        if let Ok(meta) = std::fs::metadata(path) {
            if meta.len() > 0 {
                return Fetched::Cached(path.clone());
            }
            let age = meta.modified().ok().and_then(|m| SystemTime::now().duration_since(m).ok());
            let trusted = config.cache.as_ref().map_or(DEFAULT_CACHE_MISS_S, |c| cache_miss_s(c));
            if age.is_some_and(|a| a.as_secs() < trusted) {
                return Fetched::NotFound;
            }
        }
    }
    let agent = ureq::AgentBuilder::new().timeout(config.timeout).build();
    let mut failure = None;
    for url in &config.urls {
        let url = format!("{}/buildid/{hex}/debuginfo", url.trim_end_matches('/'));
        match agent.get(&url).call() {
            Ok(response) => {
                let mut body = Vec::new();
                if let Err(e) = std::io::Read::read_to_end(&mut response.into_reader(), &mut body) {
                    failure.get_or_insert(format!("{url}: {e}"));
                    continue;
                }
                // An empty file is the cache's mark of a miss: an empty answer must not
                // become one, nor be taken for debug info.
                if body.is_empty() {
                    failure.get_or_insert(format!("{url}: an empty answer"));
                    continue;
                }
                return match &cached {
                    Some(path) => match store(path, &body) {
                        Ok(()) => Fetched::Downloaded { path: path.clone(), url },
                        Err(e) => Fetched::Failed(format!("cannot write {}: {e}", path.display())),
                    },
                    None => Fetched::Failed("no cache directory (set HOME or DEBUGINFOD_CACHE_PATH)".into()),
                };
            }
            Err(ureq::Error::Status(404, _)) => {}
            Err(e) => {
                failure.get_or_insert(format!("{url}: {e}"));
            }
        }
    }
    match failure {
        Some(why) => Fetched::Failed(why),
        None => {
            // Every server answered that it does not have it: remember for a while.
            if let Some(path) = &cached {
                let _ = store(path, &[]);
            }
            Fetched::NotFound
        }
    }
}

/// Write atomically, so a concurrent reader (another perflab, gdb) never sees half a file.
fn store(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(".debuginfo.{}.tmp", std::process::id()));
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

fn cache_miss_s(cache: &Path) -> u64 {
    std::fs::read_to_string(cache.join("cache_miss_s"))
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .unwrap_or(DEFAULT_CACHE_MISS_S)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(cache: &Path, urls: &[&str]) -> Config {
        Config {
            urls: urls.iter().map(|u| u.to_string()).collect(),
            cache: Some(cache.to_path_buf()),
            timeout: Duration::from_secs(2),
        }
    }

    #[test]
    fn without_servers_nothing_is_asked() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(fetch(&config(dir.path(), &[]), &[1, 2]), Fetched::Disabled);
    }

    #[test]
    fn the_cache_answers_first_and_a_recent_miss_is_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let entry = dir.path().join("0102").join("debuginfo");
        std::fs::create_dir_all(entry.parent().unwrap()).unwrap();
        std::fs::write(&entry, b"\x7fELF").unwrap();
        // The URL is never asked (nothing listens on port 1).
        let cfg = config(dir.path(), &["http://127.0.0.1:1"]);
        assert_eq!(fetch(&cfg, &[1, 2]), Fetched::Cached(entry.clone()));
        std::fs::write(&entry, b"").unwrap();
        assert_eq!(fetch(&cfg, &[1, 2]), Fetched::NotFound);
        // An old miss is asked again; a server that cannot be reached is a failure, said.
        std::fs::write(dir.path().join("cache_miss_s"), "0").unwrap();
        match fetch(&cfg, &[1, 2]) {
            Fetched::Failed(why) => assert!(why.contains("127.0.0.1:1"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    /// A server answering 200 with nothing is a failure, said, and leaves no cache entry
    /// (an empty file there would read as a trusted miss).
    #[test]
    fn an_empty_answer_is_a_failure_not_debug_info_or_a_miss() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut request = [0u8; 4096];
            let _ = std::io::Read::read(&mut stream, &mut request);
            std::io::Write::write_all(
                &mut stream,
                b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            )
            .unwrap();
        });
        let dir = tempfile::tempdir().unwrap();
        match fetch(&config(dir.path(), &[&format!("http://127.0.0.1:{port}")]), &[1, 2]) {
            Fetched::Failed(why) => assert!(why.contains("an empty answer"), "{why}"),
            other => panic!("{other:?}"),
        }
        server.join().unwrap();
        assert!(!dir.path().join("0102").join("debuginfo").exists());
    }
}
