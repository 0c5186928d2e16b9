//! Debug files from debuginfod servers, as elfutils' client fetches them: every server
//! of `DEBUGINFOD_URLS` (space-separated; Debian's profile sets
//! <https://debuginfod.debian.net>) is asked for `/buildid/HEX/debuginfo` in turn, and
//! the answer is cached where elfutils caches it (`$DEBUGINFOD_CACHE_PATH`, else
//! `$XDG_CACHE_HOME/debuginfod_client`, else `~/.cache/debuginfod_client`, as
//! `HEX/debuginfo`), so perflab, gdb and perf share one cache. A miss is cached as an
//! empty file for `cache_miss_s` seconds (elfutils' negative cache, default 600). Each
//! request gives up after `DEBUGINFOD_TIMEOUT` seconds without progress (default 10;
//! elfutils waits 90, too long for a report). Written here on ureq: the protocol is one
//! GET, and libdebuginfod would add a C library to link against.
//!
//! A server is an untrusted peer: its answer is streamed to a temporary file beside the
//! cache entry under a size cap (`DEBUGINFOD_MAXSIZE` bytes, as elfutils names it;
//! default 4 GiB) and a deadline for the whole download (`DEBUGINFOD_MAXTIME` seconds;
//! default 300), and enters the cache only when it is an ELF file carrying the build ID
//! asked for. What was refused is said; nothing refused is kept.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// Seconds a cached miss is trusted when the cache does not say (elfutils' default).
const DEFAULT_CACHE_MISS_S: u64 = 600;
/// Seconds per request when `DEBUGINFOD_TIMEOUT` is not set.
const DEFAULT_TIMEOUT_S: u64 = 10;
/// The largest answer taken when `DEBUGINFOD_MAXSIZE` is not set: larger than the debug
/// files of the largest programs (Chromium's is about 3 GiB), so only a lie reaches it.
const DEFAULT_MAX_SIZE: u64 = 4 << 30;
/// Seconds a whole download may take when `DEBUGINFOD_MAXTIME` is not set.
const DEFAULT_MAX_TIME_S: u64 = 300;

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
    /// How long one request may go without progress (`DEBUGINFOD_TIMEOUT`, at least 1 s).
    pub timeout: Duration,
    /// The largest answer taken, bytes (`DEBUGINFOD_MAXSIZE`).
    pub max_size: u64,
    /// How long one whole download may take (`DEBUGINFOD_MAXTIME`, at least 1 s).
    pub max_time: Duration,
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
        let number = |name: &str| var(name).and_then(|t| t.trim().parse::<u64>().ok());
        let timeout = number("DEBUGINFOD_TIMEOUT").unwrap_or(DEFAULT_TIMEOUT_S);
        Config {
            urls,
            cache,
            timeout: Duration::from_secs(timeout.max(1)),
            max_size: number("DEBUGINFOD_MAXSIZE").filter(|&n| n > 0).unwrap_or(DEFAULT_MAX_SIZE),
            max_time: Duration::from_secs(number("DEBUGINFOD_MAXTIME").unwrap_or(DEFAULT_MAX_TIME_S).max(1)),
        }
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
                // The cache is shared (gdb, perf, another perflab): an entry someone else
                // wrote is checked as a download is.
                return match check_debug_file(path, build_id) {
                    Ok(()) => Fetched::Cached(path.clone()),
                    Err(why) => Fetched::Failed(format!("the cached {} is ignored: {why}", path.display())),
                };
            }
            let age = meta.modified().ok().and_then(|m| SystemTime::now().duration_since(m).ok());
            let trusted = config.cache.as_ref().map_or(DEFAULT_CACHE_MISS_S, |c| cache_miss_s(c));
            if age.is_some_and(|a| a.as_secs() < trusted) {
                return Fetched::NotFound;
            }
        }
    }
    let Some(path) = cached else {
        return Fetched::Failed("no cache directory (set HOME or DEBUGINFOD_CACHE_PATH)".into());
    };
    let agent = ureq::AgentBuilder::new().timeout_connect(config.timeout).timeout_read(config.timeout).build();
    let mut failure = None;
    for url in &config.urls {
        let url = format!("{}/buildid/{hex}/debuginfo", url.trim_end_matches('/'));
        match agent.get(&url).call() {
            Ok(response) => match download(config, response, &path, build_id) {
                Ok(()) => return Fetched::Downloaded { path, url },
                Err(why) => {
                    failure.get_or_insert(format!("{url}: {why}"));
                }
            },
            Err(ureq::Error::Status(404, _)) => {}
            Err(e) => {
                // ureq's transport errors name the URL already.
                let e = e.to_string();
                failure.get_or_insert(if e.starts_with(&url) { e } else { format!("{url}: {e}") });
            }
        }
    }
    match failure {
        Some(why) => Fetched::Failed(why),
        None => {
            // Every server answered that it does not have it: remember for a while.
            let _ = store(&path, &[]);
            Fetched::NotFound
        }
    }
}

/// Stream `response` into a temporary file beside `path` under the size cap and the
/// deadline, and move it to `path` only when it is an ELF file with `build_id`; why not
/// otherwise (the temporary file removed).
fn download(config: &Config, response: ureq::Response, path: &Path, build_id: &[u8]) -> Result<(), String> {
    use std::io::{Read, Write};
    let started = std::time::Instant::now();
    let cap = config.max_size;
    if let Some(stated) = response.header("Content-Length").and_then(|l| l.trim().parse::<u64>().ok()) {
        if stated > cap {
            return Err(format!(
                "refused: the answer states {stated} bytes, over the limit of {cap} (DEBUGINFOD_MAXSIZE); nothing downloaded"
            ));
        }
    }
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let tmp = Temporary(dir.join(format!(".debuginfo.{}.download", std::process::id())));
    let mut file = std::fs::File::create(&tmp.0).map_err(|e| format!("cannot write {}: {e}", tmp.0.display()))?;
    let mut reader = response.into_reader();
    let mut buffer = vec![0u8; 1 << 16];
    let mut total = 0u64;
    loop {
        let n = reader.read(&mut buffer).map_err(|e| format!("reading the answer after {total} bytes: {e}"))?;
        if n == 0 {
            break;
        }
        total += n as u64;
        if total > cap {
            return Err(format!(
                "refused: the answer goes on past the limit of {cap} bytes (DEBUGINFOD_MAXSIZE); nothing kept"
            ));
        }
        if started.elapsed() > config.max_time {
            return Err(format!(
                "refused: the download took over {} s (DEBUGINFOD_MAXTIME) after {total} bytes; nothing kept",
                config.max_time.as_secs()
            ));
        }
        file.write_all(&buffer[..n]).map_err(|e| format!("cannot write {}: {e}", tmp.0.display()))?;
    }
    // An empty file is the cache's mark of a miss: an empty answer must not become one,
    // nor be taken for debug info.
    if total == 0 {
        return Err("an empty answer".into());
    }
    file.sync_all().map_err(|e| format!("cannot write {}: {e}", tmp.0.display()))?;
    drop(file);
    check_debug_file(&tmp.0, build_id).map_err(|why| format!("refused: {why}; not cached"))?;
    std::fs::rename(&tmp.0, path).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    std::mem::forget(tmp);
    Ok(())
}

/// A downloaded file, removed unless it was moved into the cache.
struct Temporary(PathBuf);

impl Drop for Temporary {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Whether `file` is an ELF file whose build ID is `build_id`; what it is otherwise.
pub(crate) fn check_debug_file(file: &Path, build_id: &[u8]) -> Result<(), String> {
    use object::Object;
    let opened = std::fs::File::open(file).map_err(|e| e.to_string())?;
    // SAFETY: a private read-only map of a file only this process has written (the
    // temporary download) or the cache's entry; a concurrent truncation would SIGBUS,
    // which the cache's atomic renames rule out.
    let map = unsafe { memmap2::Mmap::map(&opened) }.map_err(|e| e.to_string())?;
    if !map.starts_with(b"\x7fELF") {
        return Err(format!("the answer ({} bytes) is not an ELF file", map.len()));
    }
    let elf = object::File::parse(&*map).map_err(|e| format!("the answer is not a readable ELF file: {e}"))?;
    let hex = |id: &[u8]| id.iter().map(|b| format!("{b:02x}")).collect::<String>();
    match elf.build_id() {
        Ok(Some(id)) if id == build_id => match super::symbol_damage::damaged_symbols(&elf) {
            Some(why) => Err(format!("the answer has the build ID asked for but is damaged: {why}")),
            None => Ok(()),
        },
        Ok(Some(id)) => Err(format!("the answer is an ELF file of build ID {}, not {}", hex(id), hex(build_id))),
        Ok(None) => Err("the answer is an ELF file without a build ID".into()),
        Err(e) => Err(format!("the answer's build ID cannot be read: {e}")),
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
            max_size: 1 << 20,
            max_time: Duration::from_secs(20),
        }
    }

    #[test]
    fn without_servers_nothing_is_asked() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(fetch(&config(dir.path(), &[]), &[1, 2]), Fetched::Disabled);
    }

    /// This test program's own bytes and build ID (an ELF file with one: Rust's linker
    /// on Linux writes it), or None where it has none.
    fn own_elf() -> Option<(Vec<u8>, Vec<u8>)> {
        use object::Object;
        let bytes = std::fs::read("/proc/self/exe").ok()?;
        let id = object::File::parse(&*bytes).ok()?.build_id().ok()??.to_vec();
        Some((bytes, id))
    }

    fn hex(id: &[u8]) -> String {
        id.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn the_cache_answers_first_and_a_recent_miss_is_trusted() {
        let Some((elf, id)) = own_elf() else { return };
        let dir = tempfile::tempdir().unwrap();
        let entry = dir.path().join(hex(&id)).join("debuginfo");
        std::fs::create_dir_all(entry.parent().unwrap()).unwrap();
        std::fs::write(&entry, &elf).unwrap();
        // The URL is never asked (nothing listens on port 1).
        let cfg = config(dir.path(), &["http://127.0.0.1:1"]);
        assert_eq!(fetch(&cfg, &id), Fetched::Cached(entry.clone()));
        std::fs::write(&entry, b"").unwrap();
        assert_eq!(fetch(&cfg, &id), Fetched::NotFound);
        // An old miss is asked again; a server that cannot be reached is a failure, said.
        std::fs::write(dir.path().join("cache_miss_s"), "0").unwrap();
        match fetch(&cfg, &id) {
            Fetched::Failed(why) => assert!(why.contains("127.0.0.1:1"), "{why}"),
            other => panic!("{other:?}"),
        }
        // A cache entry someone else wrote that is not this build's debug file is ignored, said.
        std::fs::write(&entry, b"\x7fELF and then nonsense").unwrap();
        match fetch(&cfg, &id) {
            Fetched::Failed(why) => assert!(why.contains("is ignored") && why.contains("not a readable ELF"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    /// A one-request HTTP server on 127.0.0.1 answering with `head` then `body` (or an
    /// endless stream of `body` with `endless`); its URL.
    fn serve(head: &'static str, body: Vec<u8>, endless: bool) -> (String, std::thread::JoinHandle<()>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port());
        let server = std::thread::spawn(move || {
            use std::io::{Read, Write};
            let (mut stream, _) = listener.accept().unwrap();
            let mut request = [0u8; 4096];
            let _ = stream.read(&mut request);
            if stream.write_all(head.as_bytes()).is_err() {
                return;
            }
            loop {
                if stream.write_all(&body).is_err() || !endless {
                    return;
                }
            }
        });
        (url, server)
    }

    fn refused(url: &str, id: &[u8], cache: &Path) -> String {
        refused_under(url, id, cache, 1 << 20)
    }

    fn refused_under(url: &str, id: &[u8], cache: &Path, max_size: u64) -> String {
        match fetch(&Config { max_size, ..config(cache, &[url]) }, id) {
            Fetched::Failed(why) => why,
            other => panic!("{other:?}"),
        }
    }

    /// What a server says is checked before anything enters the cache: random bytes, an
    /// ELF of another build, a stated size over the cap and an endless chunked body are
    /// refused, said, and leave no cache entry and no temporary file; the right ELF file
    /// enters the cache.
    #[test]
    fn answers_are_capped_and_checked_before_they_are_cached() {
        let Some((elf, id)) = own_elf() else { return };
        let dir = tempfile::tempdir().unwrap();
        let entry = dir.path().join(hex(&id)).join("debuginfo");
        let leftovers = || {
            std::fs::read_dir(entry.parent().unwrap())
                .map(|d| d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect::<Vec<_>>())
                .unwrap_or_default()
        };
        let ok = "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n";

        let random: Vec<u8> = (0..(256u32 << 10)).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect();
        let (url, server) = serve(ok, random, false);
        let why = refused(&url, &id, dir.path());
        assert!(why.contains("refused: the answer (262144 bytes) is not an ELF file; not cached"), "{why}");
        server.join().unwrap();
        assert!(leftovers().is_empty(), "{:?}", leftovers());

        let (url, server) = serve(ok, elf.clone(), false);
        let other_build: Vec<u8> = id.iter().map(|b| b ^ 0xff).collect();
        let why = refused_under(&url, &other_build, dir.path(), 1 << 40);
        assert!(why.contains(&format!("an ELF file of build ID {}, not {}", hex(&id), hex(&other_build))), "{why}");
        server.join().unwrap();

        let (url, server) = serve("HTTP/1.1 200 OK\r\nContent-Length: 2000000000\r\n\r\n", vec![0; 4096], false);
        let why = refused(&url, &id, dir.path());
        assert!(why.contains("states 2000000000 bytes, over the limit of 1048576"), "{why}");
        drop(server);

        let chunk = b"10000\r\n".iter().copied().chain(vec![7u8; 0x10000]).chain(*b"\r\n").collect();
        let (url, server) = serve("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", chunk, true);
        let why = refused(&url, &id, dir.path());
        assert!(why.contains("goes on past the limit of 1048576 bytes"), "{why}");
        drop(server);
        assert!(leftovers().is_empty(), "{:?}", leftovers());

        let mut cfg = config(dir.path(), &[]);
        cfg.max_size = 1 << 40;
        let (url, server) = serve(ok, elf.clone(), false);
        cfg.urls = vec![url];
        assert!(matches!(fetch(&cfg, &id), Fetched::Downloaded { .. }));
        server.join().unwrap();
        assert_eq!(std::fs::read(&entry).unwrap(), elf);
        assert_eq!(leftovers(), ["debuginfo"]);
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
