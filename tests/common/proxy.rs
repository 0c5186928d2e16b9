//! A TCP proxy in front of a test's PostgreSQL that can play a network partition: while
//! frozen it forwards nothing in either direction (connections stay open and new ones
//! are accepted, as behind a switch that drops packets) — the server neither fails nor
//! answers. `cut` resets every connection, as a crashed middlebox does.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Where the proxy forwards to.
#[derive(Clone, Debug)]
pub enum Target {
    Tcp(String),
    Unix(PathBuf),
}

#[derive(Default)]
struct State {
    frozen: AtomicBool,
    stopped: AtomicBool,
    /// Bumped by `cut`: connections of an older generation close.
    generation: AtomicU64,
}

pub struct Proxy {
    pub port: u16,
    state: Arc<State>,
}

trait Stream: Read + Write + Send {
    fn try_clone_box(&self) -> std::io::Result<Box<dyn Stream>>;
    fn set_timeout(&self, d: Duration) -> std::io::Result<()>;
    fn close(&self);
}

impl Stream for TcpStream {
    fn try_clone_box(&self) -> std::io::Result<Box<dyn Stream>> {
        Ok(Box::new(self.try_clone()?))
    }
    fn set_timeout(&self, d: Duration) -> std::io::Result<()> {
        self.set_read_timeout(Some(d))
    }
    fn close(&self) {
        let _ = self.shutdown(Shutdown::Both);
    }
}

impl Stream for UnixStream {
    fn try_clone_box(&self) -> std::io::Result<Box<dyn Stream>> {
        Ok(Box::new(self.try_clone()?))
    }
    fn set_timeout(&self, d: Duration) -> std::io::Result<()> {
        self.set_read_timeout(Some(d))
    }
    fn close(&self) {
        let _ = self.shutdown(Shutdown::Both);
    }
}

fn connect(target: &Target) -> std::io::Result<Box<dyn Stream>> {
    Ok(match target {
        Target::Tcp(addr) => Box::new(TcpStream::connect(addr)?),
        Target::Unix(path) => Box::new(UnixStream::connect(path)?),
    })
}

/// Copy `from` → `to` while the generation lasts, holding data back while frozen.
fn pump(mut from: Box<dyn Stream>, mut to: Box<dyn Stream>, state: Arc<State>, generation: u64) {
    let _ = from.set_timeout(Duration::from_millis(20));
    let mut buffer = [0u8; 16384];
    loop {
        if state.stopped.load(Ordering::SeqCst) || state.generation.load(Ordering::SeqCst) != generation {
            break;
        }
        if state.frozen.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(20));
            continue;
        }
        match from.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => {
                if to.write_all(&buffer[..n]).is_err() {
                    break;
                }
            }
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => break,
        }
    }
    from.close();
    to.close();
}

impl Proxy {
    pub fn start(target: Target) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let state = Arc::new(State::default());
        let shared = state.clone();
        std::thread::spawn(move || {
            while !shared.stopped.load(Ordering::SeqCst) {
                let client = match listener.accept() {
                    Ok((client, _)) => client,
                    Err(_) => {
                        std::thread::sleep(Duration::from_millis(10));
                        continue;
                    }
                };
                let _ = client.set_nonblocking(false);
                let (state, target) = (shared.clone(), target.clone());
                std::thread::spawn(move || {
                    // A partitioned network does not reach the server: wait before connecting.
                    while state.frozen.load(Ordering::SeqCst) && !state.stopped.load(Ordering::SeqCst) {
                        std::thread::sleep(Duration::from_millis(20));
                    }
                    let generation = state.generation.load(Ordering::SeqCst);
                    let Ok(server) = connect(&target) else { return };
                    let client: Box<dyn Stream> = Box::new(client);
                    let (Ok(client2), Ok(server2)) = (client.try_clone_box(), server.try_clone_box()) else { return };
                    let up = state.clone();
                    std::thread::spawn(move || pump(client, server, up, generation));
                    pump(server2, client2, state, generation);
                });
            }
        });
        Proxy { port, state }
    }

    pub fn freeze(&self) {
        self.state.frozen.store(true, Ordering::SeqCst);
    }

    pub fn thaw(&self) {
        self.state.frozen.store(false, Ordering::SeqCst);
    }

    /// Reset every open connection.
    pub fn cut(&self) {
        self.state.generation.fetch_add(1, Ordering::SeqCst);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.state.stopped.store(true, Ordering::SeqCst);
    }
}
