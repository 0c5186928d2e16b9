//! `perflab top`: a live view of the hottest functions (kernel `[k]` and user) of a
//! command, running processes (`-p`) or every CPU (`-a`, the default), refreshed every
//! interval from the samples of that interval. On a terminal it takes the screen
//! (crossterm: plain ANSI, works over ssh) and gives it back on `q`, Ctrl-C, the
//! target's end, or a panic; otherwise (or with `--batch`) it prints one plain-text
//! frame per interval, like `top -b`.

use super::aggregate::{self, By, Row};
use super::kernel::Kallsyms;
use super::record::{RecordOptions, RecordingMode, Session, SessionState};
use super::symbolize::Symbolizer;
use crate::error::Failure;
use crate::executor::process::Output;
use crate::interrupt::Interrupt;
use crate::usage;
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
    fn take() -> Result<Screen, Failure> {
        // The panic message is printed before unwinding drops the guard: give the
        // screen back first, or the message would vanish with the alternate screen.
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
        terminal::enable_raw_mode().map_err(|e| usage!("cannot control the terminal: {e}"))?;
        // From here on the guard restores the terminal, whatever happens next.
        let screen = Screen;
        execute!(std::io::stdout(), terminal::EnterAlternateScreen, cursor::Hide)
            .map_err(|e| usage!("cannot control the terminal: {e}"))?;
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
enum Key {
    Quit,
    Nothing,
}

fn key(ev: Event) -> Key {
    match ev {
        Event::Key(KeyEvent { code: KeyCode::Char('q') | KeyCode::Esc, .. }) => Key::Quit,
        Event::Key(KeyEvent { code: KeyCode::Char('c'), modifiers, .. })
            if modifiers.contains(KeyModifiers::CONTROL) =>
        {
            Key::Quit
        }
        _ => Key::Nothing,
    }
}

pub fn main_top(opts: &TopOptions) -> Result<(), Failure> {
    let every_cpu_by_default = opts.every_cpu_by_default;
    if opts.interval < Duration::from_millis(100) {
        return Err(usage!("--interval must be at least 0.1 s"));
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
    session.stop_command();
    let recording = session.finish(SessionState::TargetEnded, interrupt)?;
    outcome?;
    match recording.profile.exit_code {
        Some(code) if code != 0 => Err(Failure::CommandFailed(format!("the command exited with status {code}"))),
        _ => Ok(()),
    }
}

/// Refresh until the user quits, the iterations are done, or the target ends.
fn run(
    session: &mut Session,
    opts: &TopOptions,
    record: &RecordOptions,
    interrupt: &Interrupt,
    interactive: bool,
) -> Result<(), Failure> {
    let mut symbolizer = Symbolizer::default();
    let kallsyms = Kallsyms::read();
    let mut frames = 0;
    let mut window_start = Instant::now();
    loop {
        let started = Instant::now();
        let mut progress = SessionState::Running;
        let mut quit = false;
        while started.elapsed() < opts.interval && progress == SessionState::Running && !quit {
            progress = session.poll(Duration::from_millis(50).min(opts.interval), interrupt);
            if interactive {
                while event::poll(Duration::ZERO).unwrap_or(false) {
                    if let Ok(Key::Quit) = event::read().map(key) {
                        quit = true;
                    }
                }
            }
        }
        // Samples wait in the rings while a frame is symbolised: the window runs from
        // the last frame's end, not from this interval's start.
        let mut window = session.take_window();
        let window_len = window_start.elapsed();
        window_start = Instant::now();
        match &kallsyms {
            Ok(k) => k.keep_used(&mut window),
            Err(why) => window.kernel_symbols_note = Some(why.clone()),
        }
        let located = aggregate::locate(&window, &mut symbolizer);
        let rows = aggregate::flat(&located, By::Function);
        let (width, height) = if interactive { terminal::size().unwrap_or((100, 30)) } else { (u16::MAX, u16::MAX) };
        let lines = frame(&window, &rows, record, window_len, opts.limit.min((height as usize).saturating_sub(3)));
        show(&lines, interactive, width as usize).map_err(|e| Failure::Other(e.into()))?;
        frames += 1;
        // Nobody reads a broken stdout (`| head`): stop; `cli` reports it.
        if quit
            || crate::render::stdout::failed()
            || progress != SessionState::Running
            || opts.iterations.is_some_and(|n| frames >= n)
        {
            return Ok(());
        }
    }
}

/// One refresh: a header naming the target, the window and the keys, then the rows.
fn frame(
    window: &super::format::Profile,
    rows: &[Row],
    record: &RecordOptions,
    elapsed: Duration,
    limit: usize,
) -> Vec<String> {
    let target = match &record.mode {
        RecordingMode::Launch { argv, .. } => crate::render::terminal::escape(&argv.join(" ")),
        RecordingMode::Pids { pids, .. } => {
            format!("PID {}", pids.iter().map(u32::to_string).collect::<Vec<_>>().join(","))
        }
        RecordingMode::AllCpus { .. } => "every CPU".to_string(),
    };
    let mut lines = vec![
        crate::render::color::bold(&format!(
            "perflab top — {target} — {} samples of {} in {:.1} s at {} Hz{}",
            window.total_samples(),
            window.event,
            elapsed.as_secs_f64(),
            window.frequency_hz,
            if window.lost > 0 { format!(", {} lost", window.lost) } else { String::new() }
        )),
        crate::render::color::dim(&format!("{:>7} {:>9}  function   (q or Ctrl-C quits)", "share", "samples")),
    ];
    if let Some(note) = super::kernel::missing_symbols_warning(window) {
        lines.insert(1, crate::render::color::dim(&note));
    }
    for row in rows.iter().take(limit) {
        let share = super::paint_share(row.self_share, &format!("{:>6.2}%", row.self_share * 100.0));
        lines.push(format!("{share} {:>9}  {}", row.self_samples, super::function_label(&row.name, &row.object)));
    }
    if rows.is_empty() {
        lines.push("no samples in this interval".to_string());
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

    #[test]
    fn q_escape_and_ctrl_c_quit() {
        let press = |code, modifiers| Event::Key(KeyEvent::new(code, modifiers));
        assert!(matches!(key(press(KeyCode::Char('q'), KeyModifiers::NONE)), Key::Quit));
        assert!(matches!(key(press(KeyCode::Esc, KeyModifiers::NONE)), Key::Quit));
        assert!(matches!(key(press(KeyCode::Char('c'), KeyModifiers::CONTROL)), Key::Quit));
        assert!(matches!(key(press(KeyCode::Char('c'), KeyModifiers::NONE)), Key::Nothing));
    }
}
