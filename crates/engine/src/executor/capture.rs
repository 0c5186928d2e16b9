//! Reading a command's output while it runs, for the metrics it prints: its stdout and
//! stderr are pipes (`process::Output::Capture`), and a thread of perflab drains them as
//! the output arrives, cuts it into lines and hands them to the parsers
//! (`measure::output::RunParse`); Google Benchmark's JSON is parsed from the stream.
//! What is kept is bounded whatever the command prints: the samples, the line being
//! read (at most `MAX_LINE`) and the last `TAIL` bytes of stderr, which explain a
//! failure.
//!
//! Why a thread and pipes rather than memory files read after the run (as stderr alone
//! is, without parsers): a memory file holds all of the output until the run ends — a
//! command printing a gigabyte held a gigabyte, and perflab read it whole (peak RSS
//! 1.06 GB). The thread sleeps in poll(2) while nothing arrives; a command that prints
//! a little wakes it a little. A run ends when the spawner says the command was reaped:
//! everything it wrote is in the pipes then, and the thread drains them before it
//! reports the run's samples.

use crate::measure::output::{google_benchmark_from, ParseError, Parser, RunParse, Samples, Stream};
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::mpsc;

/// The longest line kept for the parsers; longer ones are skipped (and counted).
pub(crate) const MAX_LINE: usize = 1 << 20;
/// How much of the end of stderr is kept to explain a failure.
pub(crate) const TAIL: usize = 8192;

/// What one run printed, as far as perflab keeps it.
#[derive(Debug)]
pub struct RunOutput {
    /// Per parser, or the first malformed metric line.
    pub samples: Result<Vec<Samples>, ParseError>,
    /// The last `TAIL` bytes of stderr.
    pub stderr_tail: Vec<u8>,
    /// Lines longer than `MAX_LINE`, not parsed.
    pub skipped_lines: usize,
}

impl RunOutput {
    /// The last `max_lines` non-empty lines of the stderr tail.
    pub(crate) fn stderr_lines(&self, max_lines: usize) -> String {
        let text = String::from_utf8_lossy(&self.stderr_tail);
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        lines[lines.len().saturating_sub(max_lines)..].join("\n")
    }
}

/// The descriptors of one run's pipes (read ends, non-blocking), lent to the thread.
struct Begin {
    stdout: RawFd,
    stderr: RawFd,
}

/// The reading thread of an experiment's runs.
pub(crate) struct OutputReader {
    begin: Option<mpsc::Sender<Begin>>,
    results: mpsc::Receiver<RunOutput>,
    /// A byte written here tells the thread the run ended.
    end: OwnedFd,
    thread: Option<std::thread::JoinHandle<()>>,
}

fn control_pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: pipe2 fills two fresh descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fresh descriptors we own.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn set_nonblocking(fd: RawFd) {
    // SAFETY: fcntl on a descriptor the caller keeps open.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK);
    }
}

impl OutputReader {
    /// Start the thread, parsing with `parsers`; with `echo`, what the commands print is
    /// passed on to perflab's stdout and stderr as it arrives (`--show-output`).
    pub fn start(parsers: Vec<Parser>, echo: bool) -> io::Result<OutputReader> {
        let (begin, begun) = mpsc::channel::<Begin>();
        let (report, results) = mpsc::channel::<RunOutput>();
        let (ended, end) = control_pipe()?;
        let thread = std::thread::Builder::new().name("perflab-output".into()).spawn(move || {
            while let Ok(run) = begun.recv() {
                let output = read_run(&parsers, echo, &run, &ended);
                if report.send(output).is_err() {
                    return;
                }
            }
        })?;
        Ok(OutputReader { begin: Some(begin), results, end, thread: Some(thread) })
    }

    /// A run is about to start, writing into these pipes (which the caller keeps open
    /// until [`OutputReader::end`] returned).
    pub fn begin(&self, stdout: &OwnedFd, stderr: &OwnedFd) {
        set_nonblocking(stdout.as_raw_fd());
        set_nonblocking(stderr.as_raw_fd());
        if let Some(begin) = &self.begin {
            let _ = begin.send(Begin { stdout: stdout.as_raw_fd(), stderr: stderr.as_raw_fd() });
        }
    }

    /// The run ended (its command was reaped): what it printed, once read to the end.
    pub fn end(&self) -> RunOutput {
        // SAFETY: writing one byte from a live buffer to our own pipe.
        unsafe { libc::write(self.end.as_raw_fd(), b"e".as_ptr().cast(), 1) };
        self.results.recv().unwrap_or(RunOutput {
            samples: Err(ParseError::ReaderStopped),
            stderr_tail: Vec::new(),
            skipped_lines: 0,
        })
    }
}

impl Drop for OutputReader {
    fn drop(&mut self) {
        // Closing the channel ends the thread's wait for another run.
        self.begin.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Lines of one stream, cut as bytes arrive.
#[derive(Default)]
struct Lines {
    partial: Vec<u8>,
    /// The current line outgrew [`MAX_LINE`]: dropped up to its end.
    overlong: bool,
    skipped: usize,
}

impl Lines {
    fn feed(&mut self, mut bytes: &[u8], mut each: impl FnMut(&str)) {
        while let Some(newline) = bytes.iter().position(|&b| b == b'\n') {
            self.take(&bytes[..newline]);
            self.emit(&mut each);
            bytes = &bytes[newline + 1..];
        }
        self.take(bytes);
    }

    fn take(&mut self, bytes: &[u8]) {
        if self.overlong {
            return;
        }
        if self.partial.len() + bytes.len() > MAX_LINE {
            self.overlong = true;
            self.partial = Vec::new();
            return;
        }
        self.partial.extend_from_slice(bytes);
    }

    fn emit(&mut self, each: &mut impl FnMut(&str)) {
        if self.overlong {
            self.skipped += 1;
        } else {
            let line = self.partial.strip_suffix(b"\r").unwrap_or(&self.partial);
            each(&String::from_utf8_lossy(line));
        }
        self.partial.clear();
        self.overlong = false;
    }

    /// The last line, when the output did not end with a newline.
    fn finish(&mut self, each: impl FnMut(&str)) {
        let mut each = each;
        if !self.partial.is_empty() || self.overlong {
            self.emit(&mut each);
        }
    }
}

/// Where the bytes of one run go.
struct Sinks<'p> {
    parse: RunParse<'p>,
    stdout: Lines,
    stderr: Lines,
    tail: Vec<u8>,
    echo: bool,
}

impl Sinks<'_> {
    fn stdout(&mut self, bytes: &[u8]) {
        if self.echo {
            let _ = io::stdout().write_all(bytes);
        }
        let parse = &mut self.parse;
        self.stdout.feed(bytes, |line| parse.line(Stream::Stdout, line));
    }

    fn stderr(&mut self, bytes: &[u8]) {
        if self.echo {
            let _ = io::stderr().write_all(bytes);
        }
        self.tail.extend_from_slice(bytes);
        if self.tail.len() > 2 * TAIL {
            self.tail.drain(..self.tail.len() - TAIL);
        }
        let parse = &mut self.parse;
        self.stderr.feed(bytes, |line| parse.line(Stream::Stderr, line));
    }
}

/// One run's pipes as a reader of its stdout (what Google Benchmark's parser pulls):
/// stderr is drained meanwhile, every byte goes to the sinks, and the stream ends once
/// the run ended and the pipes are empty.
struct RunSource<'a, 'p> {
    stdout: RawFd,
    stderr: RawFd,
    ended_signal: RawFd,
    stdout_open: bool,
    stderr_open: bool,
    ended: bool,
    sinks: &'a mut Sinks<'p>,
}

/// read(2) into `buf`: Some(n) (0 at end of file), None when nothing is there now.
fn read_now(fd: RawFd, buf: &mut [u8]) -> Option<usize> {
    loop {
        // SAFETY: reading into a live buffer of its length.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n >= 0 {
            return Some(n as usize);
        }
        match io::Error::last_os_error().kind() {
            io::ErrorKind::Interrupted => continue,
            io::ErrorKind::WouldBlock => return None,
            // Another error: the stream is over.
            _ => return Some(0),
        }
    }
}

impl RunSource<'_, '_> {
    /// Everything stderr holds now.
    fn drain_stderr(&mut self) {
        let mut chunk = [0u8; 65536];
        while self.stderr_open {
            match read_now(self.stderr, &mut chunk) {
                Some(0) => self.stderr_open = false,
                Some(n) => self.sinks.stderr(&chunk[..n]),
                None => return,
            }
        }
    }
}

impl Read for RunSource<'_, '_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.ended {
                // The command was reaped: what it wrote is all in the pipes.
                self.drain_stderr();
                if !self.stdout_open {
                    return Ok(0);
                }
                return match read_now(self.stdout, buf) {
                    Some(0) | None => {
                        self.stdout_open = false;
                        Ok(0)
                    }
                    Some(n) => {
                        self.sinks.stdout(&buf[..n]);
                        Ok(n)
                    }
                };
            }
            let mut fds = [
                libc::pollfd { fd: self.ended_signal, events: libc::POLLIN, revents: 0 },
                libc::pollfd { fd: if self.stderr_open { self.stderr } else { -1 }, events: libc::POLLIN, revents: 0 },
                libc::pollfd { fd: if self.stdout_open { self.stdout } else { -1 }, events: libc::POLLIN, revents: 0 },
            ];
            // SAFETY: poll on three pollfds we own (a negative fd is ignored).
            let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, -1) };
            if rc < 0 {
                if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                self.ended = true;
                continue;
            }
            if fds[0].revents != 0 {
                let mut byte = [0u8; 1];
                read_now(self.ended_signal, &mut byte);
                self.ended = true;
                continue;
            }
            if fds[1].revents != 0 {
                self.drain_stderr();
            }
            if fds[2].revents != 0 {
                match read_now(self.stdout, buf) {
                    Some(0) => self.stdout_open = false,
                    Some(n) => {
                        self.sinks.stdout(&buf[..n]);
                        return Ok(n);
                    }
                    None => {}
                }
            }
        }
    }
}

/// Read one run's output to its end and parse it.
fn read_run(parsers: &[Parser], echo: bool, run: &Begin, ended: &OwnedFd) -> RunOutput {
    let mut sinks = Sinks {
        parse: RunParse::new(parsers),
        stdout: Lines::default(),
        stderr: Lines::default(),
        tail: Vec::new(),
        echo,
    };
    let wants_json = sinks.parse.wants_json();
    let mut source = RunSource {
        stdout: run.stdout,
        stderr: run.stderr,
        ended_signal: ended.as_raw_fd(),
        stdout_open: true,
        stderr_open: true,
        ended: false,
        sinks: &mut sinks,
    };
    let json = wants_json.then(|| google_benchmark_from(&mut source));
    // The rest of the output, for the line parsers (and to empty the pipes).
    let mut chunk = vec![0u8; 65536];
    while matches!(source.read(&mut chunk), Ok(n) if n > 0) {}
    if let Some(json) = json {
        sinks.parse.google_benchmark(json);
    }
    let Sinks { mut parse, mut stdout, mut stderr, mut tail, echo } = sinks;
    stdout.finish(|line| parse.line(Stream::Stdout, line));
    stderr.finish(|line| parse.line(Stream::Stderr, line));
    if echo {
        let _ = io::stdout().flush();
    }
    if tail.len() > TAIL {
        tail.drain(..tail.len() - TAIL);
    }
    RunOutput { samples: parse.finish(), stderr_tail: tail, skipped_lines: stdout.skipped + stderr.skipped }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pipe() -> (OwnedFd, std::fs::File) {
        let (read, write) = control_pipe().unwrap();
        // SAFETY: clearing O_NONBLOCK on the write end we own (writes may then wait).
        unsafe { libc::fcntl(write.as_raw_fd(), libc::F_SETFL, 0) };
        (read, std::fs::File::from(write))
    }

    #[test]
    fn lines_are_cut_across_chunks_and_overlong_ones_skipped() {
        let mut lines = Lines::default();
        let mut got = Vec::new();
        lines.feed(b"v=1\nv=", |l| got.push(l.to_string()));
        lines.feed(b"2\r\n", |l| got.push(l.to_string()));
        lines.feed(&vec![b'x'; MAX_LINE + 1], |l| got.push(l.to_string()));
        lines.feed(b"y\nlast", |l| got.push(l.to_string()));
        lines.finish(|l| got.push(l.to_string()));
        assert_eq!(got, ["v=1", "v=2", "last"]);
        assert_eq!(lines.skipped, 1);
    }

    #[test]
    fn a_run_is_read_while_it_writes_and_to_its_end() {
        let parsers = vec![Parser::regex(r"v=(?<v>\d+)").unwrap()];
        let reader = OutputReader::start(parsers, false).unwrap();
        let ((out, mut out_w), (err, mut err_w)) = (pipe(), pipe());
        for run in 0..2 {
            reader.begin(&out, &err);
            // More than a pipe holds: the thread must read while this writes.
            let filler = vec![b'.'; 100_000];
            for i in 0..20 {
                out_w.write_all(&filler).unwrap();
                writeln!(out_w, "\nv={}", i + run).unwrap();
            }
            err_w.write_all(b"warning: one\nerror: two\nv=99").unwrap();
            let output = reader.end();
            let samples = output.samples.as_ref().unwrap();
            let expected: Vec<f64> = (0..20).map(|i| (i + run) as f64).chain([99.0]).collect();
            assert_eq!(samples[0].get("v"), Some(&expected[..]));
            assert_eq!(output.stderr_lines(2), "error: two\nv=99");
        }
    }
}
