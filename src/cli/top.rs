//! `perflab top`: a live view of the hottest functions (kernel `[k]` and user) of a
//! command, running processes (`-p`) or every CPU (`-a`, the default), refreshed every
//! interval from the samples of that interval, one row per process and function (pid
//! and command name beside each). On a terminal it takes the screen (crossterm: plain
//! ANSI, works over ssh), takes keys to sort, filter and pause, and gives the screen back
//! on `q`, Ctrl-C, the target's end, or a panic, printing the last frame where it can
//! be read afterwards; otherwise (or with `--batch`) it prints one plain-text frame per
//! interval, like `top -b`.

use crate::error::Failure;
use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyModifiers};
use crossterm::{cursor, execute, terminal};
use perflab_profile::aggregate::{self, Located};
use perflab_profile::error::ProfileError;
use perflab_profile::kernel::Kallsyms;
use perflab_profile::record::{RecordOptions, Session, SessionState};
use perflab_profile::symbolize::Symbolizer;
use perflab_profile::top::{rows, TopOptions, View};
use perflab_render::profile::top::{cut_to_width, frame};
use perflab_sys::interrupt::Interrupt;
use perflab_sys::spawn::process::Output;
use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

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

/// Apply a key to the view; what the loop must do next.
fn key(view: &mut View, ev: Event) -> Key {
    let Event::Key(KeyEvent { code, modifiers, kind, .. }) = ev else { return Key::Nothing };
    if kind == event::KeyEventKind::Release {
        return Key::Nothing;
    }
    if code == KeyCode::Char('c') && modifiers.contains(KeyModifiers::CONTROL) {
        return Key::Interrupt;
    }
    if let Some(text) = &mut view.typing {
        match code {
            KeyCode::Enter => view.filter = view.typing.take().unwrap_or_default(),
            KeyCode::Esc => view.typing = None,
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
        KeyCode::Esc if !view.filter.is_empty() => {
            view.filter.clear();
            Key::Redraw
        }
        KeyCode::Esc => Key::Quit,
        KeyCode::Char('s') => {
            view.sort = view.sort.next();
            Key::Redraw
        }
        KeyCode::Char('/') | KeyCode::Char('f') => {
            view.typing = Some(String::new());
            Key::Redraw
        }
        KeyCode::Char('p') | KeyCode::Char(' ') => {
            view.paused = !view.paused;
            Key::Redraw
        }
        _ => Key::Nothing,
    }
}

pub fn main_top(opts: &TopOptions) -> Result<(), Failure> {
    let every_cpu_by_default = opts.every_cpu_by_default;
    if opts.interval < Duration::from_millis(100) {
        return Err(ProfileError::IntervalTooShort.into());
    }
    let interactive = !opts.batch && std::io::stdout().is_terminal() && std::io::stdin().is_terminal();
    // The command's output would scribble over the view.
    let record = opts.record.clone().with_output(if interactive { Output::Discard } else { Output::Inherit });
    let interrupt = perflab_sys::interrupt::watcher();
    let mut session = Session::start(&record).map_err(Failure::from).map_err(|failure| match failure {
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
    let mut last: Option<(perflab_profile::format::Profile, Vec<Located>, Duration)> = None;
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
                match event::read().map(|ev| key(&mut view, ev)) {
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
        if crate::output::stdout::failed()
            || progress != SessionState::Running
            || opts.iterations.is_some_and(|n| frames >= n)
        {
            return Ok(Ending { interrupted: false, last_frame });
        }
    }
}

/// Draw one frame on the terminal; returns it as plain text (for after the view ends).
fn draw(
    window: &perflab_profile::format::Profile,
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

fn show(lines: &[String], interactive: bool, width: usize) -> std::io::Result<()> {
    if !interactive {
        crate::output::stdout::write(&(lines.join("\n") + "\n\n"));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn press(view: &mut View, code: KeyCode) -> Key {
        key(view, Event::Key(KeyEvent::new(code, KeyModifiers::NONE)))
    }

    #[test]
    fn q_and_escape_quit_and_ctrl_c_interrupts() {
        let mut view = View::default();
        assert_eq!(press(&mut view, KeyCode::Char('q')), Key::Quit);
        assert_eq!(press(&mut view, KeyCode::Esc), Key::Quit);
        assert_eq!(
            key(&mut view, Event::Key(KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL))),
            Key::Interrupt
        );
        assert_eq!(press(&mut view, KeyCode::Char('c')), Key::Nothing);
    }

    #[test]
    fn keys_sort_filter_and_pause() {
        let mut view = View::default();
        assert_eq!(press(&mut view, KeyCode::Char('s')), Key::Redraw);
        assert_eq!(view.sort, perflab_profile::top::SortKey::Pid);
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
}
