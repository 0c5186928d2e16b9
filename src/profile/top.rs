//! `perflab top`: a live view of the hottest functions (kernel `[k]` and user) of a
//! command, running processes (`-p`) or every CPU (`-a`, the default), refreshed every
//! interval from the samples of that interval, one row per process and function (pid
//! and command name beside each). On a terminal it takes the screen (crossterm: plain
//! ANSI, works over ssh), takes keys to sort, filter and pause, and gives the screen back
//! on `q`, Ctrl-C, the target's end, or a panic, printing the last frame where it can
//! be read afterwards; otherwise (or with `--batch`) it prints one plain-text frame per
//! interval, like `top -b`.

use super::aggregate::{self, Located};
use super::error::ProfileError;
use super::kernel::Kallsyms;
use super::record::{RecordOptions, RecordingMode, Session, SessionState};
use super::symbolize::Symbolizer;
use crate::error::Failure;
use crate::executor::process::Output;
use crate::interrupt::Interrupt;
use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyModifiers};
use crossterm::{cursor, execute, terminal};
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub struct TopOptions {
    /// What to sample.
    pub record: RecordOptions,
    /// Every CPU was chosen because no target was given (said when that fails).
    pub every_cpu_by_default: bool,
    /// Time between refreshes; each frame shows the samples of the last interval.
    pub interval: Duration,
    /// Stop after this many frames (None: until `q`, Ctrl-C or the target's end).
    pub iterations: Option<u32>,
    /// Plain-text frames on stdout even on a terminal.
    pub batch: bool,
    /// Rows per frame (on a terminal, at most what fits).
    pub limit: usize,
}

/// The screen while the live view owns it; dropping it (also while unwinding from a
/// panic) gives it back as it was.
struct Screen;

impl Screen {
    fn take() -> Result<Screen, ProfileError> {
        // The panic message is printed before unwinding drops the guard: give the
        // screen back first, or the message would vanish with the alternate screen.
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
        terminal::enable_raw_mode().map_err(ProfileError::Terminal)?;
        // From here on the guard restores the terminal, whatever happens next.
        let screen = Screen;
        execute!(std::io::stdout(), terminal::EnterAlternateScreen, cursor::Hide).map_err(ProfileError::Terminal)?;
        Ok(screen)
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        restore();
    }
}

fn restore() {
    let _ = execute!(std::io::stdout(), cursor::Show, terminal::LeaveAlternateScreen);
    let _ = terminal::disable_raw_mode();
}

/// What the user asked for with the keyboard.
#[derive(Debug, PartialEq)]
enum Key {
    Quit,
    /// Ctrl-C: like SIGTERM, an interruption (exit 130).
    Interrupt,
    /// The view changed (sort, filter, pause): draw it again now.
    Redraw,
    Nothing,
}

/// How rows are ordered (`s` cycles through them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SortKey {
    Samples,
    Pid,
    Command,
    Function,
}

impl SortKey {
    fn next(self) -> SortKey {
        match self {
            SortKey::Samples => SortKey::Pid,
            SortKey::Pid => SortKey::Command,
            SortKey::Command => SortKey::Function,
            SortKey::Function => SortKey::Samples,
        }
    }

    fn name(self) -> &'static str {
        match self {
            SortKey::Samples => "samples",
            SortKey::Pid => "pid",
            SortKey::Command => "command",
            SortKey::Function => "function",
        }
    }
}

/// What the keys set: the order, a filter, and whether the view is frozen.
#[derive(Debug, Clone)]
struct View {
    sort: SortKey,
    /// Rows whose pid, command or function contains this (case-insensitive).
    filter: String,
    /// The filter being typed after `/`, until Enter or Esc.
    typing: Option<String>,
    paused: bool,
}

impl Default for View {
    fn default() -> View {
        View { sort: SortKey::Samples, filter: String::new(), typing: None, paused: false }
    }
}

/// The keys, as the header lists them.
const KEYS: &str = "q quit · s sort · / filter · p pause";

impl View {
    fn key(&mut self, ev: Event) -> Key {
        let Event::Key(KeyEvent { code, modifiers, kind, .. }) = ev else { return Key::Nothing };
        if kind == event::KeyEventKind::Release {
            return Key::Nothing;
        }
        if code == KeyCode::Char('c') && modifiers.contains(KeyModifiers::CONTROL) {
            return Key::Interrupt;
        }
        if let Some(text) = &mut self.typing {
            match code {
                KeyCode::Enter => self.filter = self.typing.take().unwrap_or_default(),
                KeyCode::Esc => self.typing = None,
                KeyCode::Backspace => {
                    text.pop();
                }
                KeyCode::Char(c) if !c.is_control() => text.push(c),
                _ => return Key::Nothing,
            }
            return Key::Redraw;
        }
        match code {
            KeyCode::Char('q') => Key::Quit,
            // Esc first clears a filter, then quits.
            KeyCode::Esc if !self.filter.is_empty() => {
                self.filter.clear();
                Key::Redraw
            }
            KeyCode::Esc => Key::Quit,
            KeyCode::Char('s') => {
                self.sort = self.sort.next();
                Key::Redraw
            }
            KeyCode::Char('/') | KeyCode::Char('f') => {
                self.typing = Some(String::new());
                Key::Redraw
            }
            KeyCode::Char('p') | KeyCode::Char(' ') => {
                self.paused = !self.paused;
                Key::Redraw
            }
            _ => Key::Nothing,
        }
    }
}

/// One row of the view: a function's samples in one process.
#[derive(Debug, Clone, PartialEq)]
struct TopRow {
    pid: u32,
    comm: String,
    function: String,
    object: String,
    samples: u64,
    /// Of all samples of the interval (before filtering), 0–1.
    share: f64,
}

/// The interval's samples per (process, function), filtered and sorted as `view` says.
fn rows(window: &super::format::Profile, located: &[Located], view: &View) -> Vec<TopRow> {
    let total = located.iter().map(|l| l.count).sum::<u64>().max(1);
    let mut grouped: std::collections::HashMap<(u32, &str, &str), u64> = std::collections::HashMap::new();
    for l in located {
        *grouped.entry((l.pid, l.location.function.as_str(), l.location.object.as_str())).or_default() += l.count;
    }
    let comm = |pid: u32| {
        let tasks = window.tasks.iter().filter(|t| t.pid == pid);
        let main = tasks.clone().find(|t| t.tid == pid).or_else(|| tasks.clone().next());
        main.map_or(String::new(), |t| t.comm.clone())
    };
    let filter = view.filter.to_lowercase();
    let mut out: Vec<TopRow> = grouped
        .into_iter()
        .map(|((pid, function, object), samples)| TopRow {
            pid,
            comm: comm(pid),
            function: function.to_string(),
            object: super::symbolize::basename(object).to_string(),
            samples,
            share: samples as f64 / total as f64,
        })
        .filter(|r| {
            filter.is_empty()
                || r.pid.to_string().contains(&filter)
                || r.comm.to_lowercase().contains(&filter)
                || r.function.to_lowercase().contains(&filter)
        })
        .collect();
    let by_samples = |a: &TopRow, b: &TopRow| b.samples.cmp(&a.samples).then(a.function.cmp(&b.function));
    out.sort_by(|a, b| match view.sort {
        SortKey::Samples => by_samples(a, b),
        SortKey::Pid => a.pid.cmp(&b.pid).then(by_samples(a, b)),
        SortKey::Command => a.comm.cmp(&b.comm).then(a.pid.cmp(&b.pid)).then(by_samples(a, b)),
        SortKey::Function => a.function.cmp(&b.function).then(by_samples(a, b)),
    });
    out
}

pub fn main_top(opts: &TopOptions) -> Result<(), Failure> {
    let every_cpu_by_default = opts.every_cpu_by_default;
    if opts.interval < Duration::from_millis(100) {
        return Err(ProfileError::IntervalTooShort.into());
    }
    let interactive = !opts.batch && std::io::stdout().is_terminal() && std::io::stdin().is_terminal();
    // The command's output would scribble over the view.
    let record = opts.record.clone().with_output(if interactive { Output::Discard } else { Output::Inherit });
    let interrupt = crate::interrupt::watcher();
    let mut session = Session::start(&record).map_err(|failure| match failure {
        Failure::Usage(why) if every_cpu_by_default => {
            Failure::Usage(format!("{why} (top watches every CPU unless given -p PID or a command)"))
        }
        other => other,
    })?;
    let screen = if interactive { Some(Screen::take()?) } else { None };
    let outcome = run(&mut session, opts, &record, interrupt, screen.is_some());
    drop(screen);
    // The alternate screen took the last frame with it: print it where it stays.
    if let (true, Ok(ending)) = (interactive, &outcome) {
        let mut out = std::io::stdout().lock();
        for line in &ending.last_frame {
            let _ = writeln!(out, "{line}");
        }
    }
    session.stop_command();
    let recording = session.finish(SessionState::TargetEnded, interrupt)?;
    if outcome?.interrupted {
        return Err(Failure::Interrupted("interrupted".into()));
    }
    match recording.profile.exit_code {
        Some(code) if code != 0 => Err(Failure::CommandFailed(format!("the command exited with status {code}"))),
        _ => Ok(()),
    }
}

/// How the live view ended.
struct Ending {
    /// Ctrl-C or SIGTERM (exit 130), not `q` or the target's end.
    interrupted: bool,
    /// The last frame drawn, in plain text.
    last_frame: Vec<String>,
}

/// Refresh until the user quits, the iterations are done, or the target ends.
fn run(
    session: &mut Session,
    opts: &TopOptions,
    record: &RecordOptions,
    interrupt: &Interrupt,
    interactive: bool,
) -> Result<Ending, Failure> {
    let mut symbolizer = Symbolizer::default();
    let kallsyms = Kallsyms::read();
    let mut frames = 0;
    let mut window_start = Instant::now();
    let mut view = View::default();
    // The last interval's rows, to redraw at once when a key changes the view.
    let mut last: Option<(super::format::Profile, Vec<Located>, Duration)> = None;
    let mut last_frame = Vec::new();
    loop {
        let started = Instant::now();
        let mut progress = SessionState::Running;
        let mut ending = None;
        while started.elapsed() < opts.interval && progress == SessionState::Running && ending.is_none() {
            progress = session.poll(Duration::from_millis(50).min(opts.interval), interrupt);
            if !interactive {
                continue;
            }
            while event::poll(Duration::ZERO).unwrap_or(false) {
                match event::read().map(|ev| view.key(ev)) {
                    Ok(Key::Quit) => ending = Some(false),
                    Ok(Key::Interrupt) => ending = Some(true),
                    Ok(Key::Redraw) => {
                        if let Some((window, located, len)) = &last {
                            last_frame = draw(window, located, record, *len, &view, opts.limit)?;
                        }
                    }
                    _ => {}
                }
            }
        }
        if progress == SessionState::Interrupted {
            ending = Some(true);
        }
        // Samples wait in the rings while a frame is symbolised: the window runs from
        // the last frame's end, not from this interval's start.
        let mut window = session.take_window();
        let window_len = window_start.elapsed();
        window_start = Instant::now();
        if !view.paused || !interactive {
            match &kallsyms {
                Ok(k) => k.keep_used(&mut window),
                Err(why) => window.kernel_symbols_note = Some(why.to_string()),
            }
            let located = aggregate::locate(&window, &mut symbolizer);
            if interactive {
                last_frame = draw(&window, &located, record, window_len, &view, opts.limit)?;
            } else {
                let lines =
                    frame(&window, &rows(&window, &located, &view), record, window_len, &view, opts.limit, false);
                show(&lines, false, usize::MAX).map_err(|e| Failure::Other(e.into()))?;
            }
            last = Some((window, located, window_len));
        }
        frames += 1;
        if let Some(interrupted) = ending {
            return Ok(Ending { interrupted, last_frame });
        }
        // Nobody reads a broken stdout (`| head`): stop; `cli` reports it.
        if crate::render::stdout::failed()
            || progress != SessionState::Running
            || opts.iterations.is_some_and(|n| frames >= n)
        {
            return Ok(Ending { interrupted: false, last_frame });
        }
    }
}

/// Draw one frame on the terminal; returns it as plain text (for after the view ends).
fn draw(
    window: &super::format::Profile,
    located: &[Located],
    record: &RecordOptions,
    elapsed: Duration,
    view: &View,
    limit: usize,
) -> Result<Vec<String>, Failure> {
    let (width, height) = terminal::size().unwrap_or((100, 30));
    let limit = limit.min((height as usize).saturating_sub(4));
    let lines = frame(window, &rows(window, located, view), record, elapsed, view, limit, true);
    show(&lines, true, width as usize).map_err(|e| Failure::Other(e.into()))?;
    Ok(lines.iter().map(|l| cut_to_width(l, width as usize)).collect())
}

/// One refresh: a header naming the target, the window and the keys, then the rows.
fn frame(
    window: &super::format::Profile,
    rows: &[TopRow],
    record: &RecordOptions,
    elapsed: Duration,
    view: &View,
    limit: usize,
    interactive: bool,
) -> Vec<String> {
    use crate::render::color;
    let target = match &record.mode {
        RecordingMode::Launch { argv, .. } => crate::render::terminal::escape(&argv.join(" ")),
        RecordingMode::Pids { pids, .. } => {
            format!("PID {}", pids.iter().map(u32::to_string).collect::<Vec<_>>().join(","))
        }
        RecordingMode::AllCpus { .. } => "every CPU".to_string(),
    };
    let mut state = format!("sorted by {}", view.sort.name());
    if let Some(typing) = &view.typing {
        state += &format!(" · filter: {}▏ (Enter applies, Esc cancels)", crate::render::terminal::escape(typing));
    } else if !view.filter.is_empty() {
        state += &format!(" · filter \"{}\" (Esc clears)", crate::render::terminal::escape(&view.filter));
    }
    if view.paused {
        state += " · PAUSED (p resumes)";
    }
    let mut lines = vec![
        color::bold(&format!(
            "perflab top — {target} — {} samples of {} in {:.1} s at {} Hz{}",
            window.total_samples(),
            window.event,
            elapsed.as_secs_f64(),
            window.frequency_hz,
            if window.lost > 0 { format!(", {} lost", window.lost) } else { String::new() }
        )),
        color::dim(&if interactive { format!("{state} — keys: {KEYS}") } else { state }),
        color::dim(&format!("{:>7} {:>9} {:>7}  {:<15} function", "share", "samples", "pid", "command")),
    ];
    if let Some(note) = super::kernel::missing_symbols_warning(window) {
        lines.insert(1, color::dim(&note));
    }
    for row in rows.iter().take(limit) {
        let share = crate::render::profile::paint_share(row.share, &format!("{:>6.2}%", row.share * 100.0));
        lines.push(format!(
            "{share} {:>9} {:>7}  {:<15} {}",
            row.samples,
            row.pid,
            crate::render::terminal::escape(&row.comm),
            crate::render::profile::function_label(&row.function, &row.object)
        ));
    }
    if rows.is_empty() {
        lines.push(if view.filter.is_empty() {
            "no samples in this interval".to_string()
        } else {
            "no samples match the filter in this interval".to_string()
        });
    } else if rows.len() > limit {
        let rest: u64 = rows[limit..].iter().map(|r| r.samples).sum();
        lines.push(color::dim(&format!("{:>7} {rest:>9}  ({} more rows)", "", rows.len() - limit)));
    }
    lines
}

fn show(lines: &[String], interactive: bool, width: usize) -> std::io::Result<()> {
    if !interactive {
        crate::render::stdout::write(&(lines.join("\n") + "\n\n"));
        return Ok(());
    }
    let mut out = std::io::stdout().lock();
    execute!(out, cursor::MoveTo(0, 0), terminal::Clear(terminal::ClearType::All))?;
    for line in lines {
        // Raw mode: a newline does not return the carriage. Cut long lines instead of
        // letting them wrap and scroll the view (colour codes do not take columns).
        write!(out, "{}\r\n", cut_to_width(line, width))?;
    }
    out.flush()
}

/// The line cut to `width` visible columns, ANSI colour sequences kept whole.
fn cut_to_width(line: &str, width: usize) -> String {
    let mut out = String::new();
    let mut visible = 0;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            out.push(c);
            for c in chars.by_ref() {
                out.push(c);
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
            continue;
        }
        if visible == width {
            out.push_str("\u{1b}[0m");
            break;
        }
        out.push(c);
        visible += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_cut_to_the_width_keeping_colour_codes() {
        assert_eq!(cut_to_width("abcdef", 3), "abc\u{1b}[0m");
        assert_eq!(cut_to_width("\u{1b}[31mabc\u{1b}[0m", 2), "\u{1b}[31mab\u{1b}[0m");
        assert_eq!(cut_to_width("ab", 5), "ab");
    }

    fn press(view: &mut View, code: KeyCode) -> Key {
        view.key(Event::Key(KeyEvent::new(code, KeyModifiers::NONE)))
    }

    #[test]
    fn q_and_escape_quit_and_ctrl_c_interrupts() {
        let mut view = View::default();
        assert_eq!(press(&mut view, KeyCode::Char('q')), Key::Quit);
        assert_eq!(press(&mut view, KeyCode::Esc), Key::Quit);
        assert_eq!(view.key(Event::Key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL))), Key::Interrupt);
        assert_eq!(press(&mut view, KeyCode::Char('c')), Key::Nothing);
    }

    #[test]
    fn keys_sort_filter_and_pause() {
        let mut view = View::default();
        assert_eq!(press(&mut view, KeyCode::Char('s')), Key::Redraw);
        assert_eq!(view.sort, SortKey::Pid);
        press(&mut view, KeyCode::Char('/'));
        for c in "spin".chars() {
            press(&mut view, KeyCode::Char(c));
        }
        assert_eq!(view.typing.as_deref(), Some("spin"));
        assert_eq!(press(&mut view, KeyCode::Char('q')), Key::Redraw, "q is text while typing a filter");
        press(&mut view, KeyCode::Backspace);
        press(&mut view, KeyCode::Enter);
        assert_eq!((view.filter.as_str(), view.typing.is_none()), ("spin", true));
        // Esc clears the filter before it quits.
        assert_eq!(press(&mut view, KeyCode::Esc), Key::Redraw);
        assert!(view.filter.is_empty());
        press(&mut view, KeyCode::Char('p'));
        assert!(view.paused);
    }

    #[test]
    fn rows_are_per_process_and_function_with_the_command_name() {
        use crate::profile::format::{Profile, Task};
        use crate::profile::symbolize::Location;
        let located = |pid, function: &str, count| Located {
            location: Location { object: "/bin/app".into(), function: function.into(), file: None, line: None },
            pid,
            tid: pid,
            count,
            period: count,
        };
        let window = Profile {
            tasks: vec![Task { pid: 1, tid: 1, comm: "ours".into() }, Task { pid: 2, tid: 2, comm: "theirs".into() }],
            ..Profile::default()
        };
        let samples = [located(1, "spin", 30), located(2, "spin", 50), located(1, "spin", 10), located(1, "main", 10)];
        let mut view = View::default();
        let all = rows(&window, &samples, &view);
        let summary: Vec<(u32, &str, &str, u64)> =
            all.iter().map(|r| (r.pid, r.comm.as_str(), r.function.as_str(), r.samples)).collect();
        assert_eq!(summary, [(2, "theirs", "spin", 50), (1, "ours", "spin", 40), (1, "ours", "main", 10)]);
        assert!((all[0].share - 0.5).abs() < 1e-12);
        view.filter = "OURS".into();
        assert_eq!(rows(&window, &samples, &view).len(), 2);
        view.filter.clear();
        view.sort = SortKey::Function;
        assert_eq!(rows(&window, &samples, &view)[0].function, "main");
    }
}
