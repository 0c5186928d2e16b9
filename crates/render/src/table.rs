//! Terminal tables that fit the terminal. A table wider than the terminal first loses
//! its least needed columns, in the order each table gives (its documented drop order,
//! docs/output.md), then says once, above it, a name-like column that is the same in
//! every row (`candidate vs baseline: B vs A`), then shortens the other name-like
//! columns by eliding what their rows share (`…--size 10000000`, `…--name hot 3…`) —
//! in the middle when nothing is shared ("./build-a/… --n 1e6") — and says what it left
//! out. Prose lines (the verdict sentence) wrap at the width ([`wrap`]). Piped, or with `--wide`, tables keep their full
//! width: a file or a script gets every column. `COLUMNS` in the environment sets the
//! width explicitly (also when piped).
//!
//! Laid out by comfy-table; this module only decides which columns and how wide.

use super::color;
use comfy_table::{presets, CellAlignment, Table, TableComponent};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use unicode_width::UnicodeWidthStr;

static WIDE: AtomicBool = AtomicBool::new(false);

/// `--wide`: never fit tables to the terminal.
pub fn set_wide(wide: bool) {
    WIDE.store(wide, Ordering::Relaxed);
}

/// Which stream a table is printed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// The width tables printed on `stream` must fit: `COLUMNS` when set, else the terminal's
/// width; `None` (no limit) with `--wide` or when `stream` is not a terminal.
pub fn width(stream: Stream) -> Option<usize> {
    if WIDE.load(Ordering::Relaxed) {
        return None;
    }
    if let Some(columns) = std::env::var("COLUMNS").ok().and_then(|c| c.trim().parse::<usize>().ok()) {
        return (columns > 0).then_some(columns);
    }
    let (fd, terminal) = match stream {
        Stream::Stdout => (libc::STDOUT_FILENO, std::io::stdout().is_terminal()),
        Stream::Stderr => (libc::STDERR_FILENO, std::io::stderr().is_terminal()),
    };
    if !terminal {
        return None;
    }
    // SAFETY: TIOCGWINSZ fills a winsize we own; the descriptor is a terminal.
    let mut size: libc::winsize = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::ioctl(fd, libc::TIOCGWINSZ, &mut size) } == 0;
    (ok && size.ws_col > 0).then_some(size.ws_col as usize)
}

/// The width `text` takes on a terminal: wide characters count twice, colour codes not at all.
pub(crate) fn display_width(text: &str) -> usize {
    strip_ansi(text).width()
}

fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            // CSI: ESC [ parameters final-byte (a letter).
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// `text` in at most `width` columns, cut in the middle: both ends of a command or a
/// path tell commands apart more often than either alone.
pub(crate) fn abbreviate(text: &str, width: usize) -> String {
    if text.width() <= width {
        return text.to_string();
    }
    if width == 0 {
        return String::new();
    }
    let keep = width - 1;
    let (head_width, tail_width) = (keep.div_ceil(2), keep / 2);
    let mut head = String::new();
    for c in text.chars() {
        if (head.clone() + &c.to_string()).width() > head_width {
            break;
        }
        head.push(c);
    }
    let mut tail: Vec<char> = Vec::new();
    for c in text.chars().rev() {
        let candidate: String = std::iter::once(c).chain(tail.iter().rev().copied()).collect();
        if candidate.width() > tail_width {
            break;
        }
        tail.push(c);
    }
    let tail: String = tail.into_iter().rev().collect();
    format!("{head}…{tail}")
}

/// `text` in at most `width` columns keeping what tells it apart from `other` (where the
/// two differ) and, cut in their middles, what comes before and after it: `sle…0.02…lag`
/// beside `sle…0.01…lag`, where cutting both in the middle gave the same text twice;
/// None when what differs does not fit.
fn apart(text: &str, other: &str, width: usize) -> Option<String> {
    if text.width() <= width {
        return Some(text.to_string());
    }
    let chars: Vec<char> = text.chars().collect();
    let others: Vec<char> = other.chars().collect();
    let prefix = chars.iter().zip(&others).take_while(|(a, b)| a == b).count();
    let suffix = chars[prefix..]
        .iter()
        .rev()
        .zip(others[prefix.min(others.len())..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let differ: String = chars[prefix..chars.len() - suffix].iter().collect();
    if differ.is_empty() || differ.width() + 2 > width {
        return None;
    }
    let head: String = chars[..prefix].iter().collect();
    let tail: String = chars[chars.len() - suffix..].iter().collect();
    let room = width - differ.width();
    let head_room = head.width().min(room.div_ceil(2).max(room.saturating_sub(tail.width())));
    let head = abbreviate(&head, head_room);
    let tail = abbreviate(&tail, room - head.width());
    Some(format!("{head}{differ}{tail}"))
}

/// `text` with the `shared_prefix` and `shared_suffix` characters its column's rows all
/// have elided as far as `width` needs, keeping every character of what differs and as
/// much of the shared start (the program) and end as fits: `./b…size 10000000 (baseline)`.
/// None when what differs does not fit, or nothing differs.
fn elide_shared(text: &str, shared_prefix: usize, shared_suffix: usize, width: usize) -> Option<String> {
    let chars: Vec<char> = text.chars().collect();
    if shared_prefix + shared_suffix >= chars.len() {
        return None;
    }
    let head: String = chars[..shared_prefix].iter().collect();
    let differ: String = chars[shared_prefix..chars.len() - shared_suffix].iter().collect();
    let tail: String = chars[chars.len() - shared_suffix..].iter().collect();
    // At least the ellipsis of each shared part that must shorten.
    let room = width.checked_sub(differ.width())?;
    let head_room = head.width().min(room.div_ceil(2).max(room.saturating_sub(tail.width())));
    let head = keep_start(&head, head_room)?;
    let tail = keep_end(&tail, room - head.width())?;
    Some(format!("{head}{differ}{tail}"))
}

/// `text`'s start in `width` columns, `…` ending it when cut; None when 0 columns must hold
/// a non-empty text.
fn keep_start(text: &str, width: usize) -> Option<String> {
    if text.width() <= width {
        return Some(text.to_string());
    }
    let mut out = String::new();
    for c in text.chars() {
        if out.width() + c.to_string().width() + 1 > width {
            break;
        }
        out.push(c);
    }
    (width > 0).then(|| out + "…")
}

/// `text`'s end in `width` columns, `…` starting it when cut.
fn keep_end(text: &str, width: usize) -> Option<String> {
    if text.width() <= width {
        return Some(text.to_string());
    }
    let mut out: Vec<char> = Vec::new();
    for c in text.chars().rev() {
        if out.iter().collect::<String>().width() + c.to_string().width() + 1 > width {
            break;
        }
        out.push(c);
    }
    (width > 0).then(|| std::iter::once('…').chain(out.into_iter().rev()).collect())
}

/// The characters every one of `texts` starts with, and then ends with (not overlapping
/// the shortest one's start).
fn shared_ends<'a>(texts: impl Iterator<Item = &'a str> + Clone) -> (usize, usize) {
    let rows: Vec<Vec<char>> = texts.map(|t| t.chars().collect()).collect();
    let Some(first) = rows.first() else { return (0, 0) };
    let shortest = rows.iter().map(Vec::len).min().unwrap_or(0);
    let prefix = (0..shortest).take_while(|&i| rows.iter().all(|r| r[i] == first[i])).count();
    let suffix = (0..shortest - prefix)
        .take_while(|&i| rows.iter().all(|r| r[r.len() - 1 - i] == first[first.len() - 1 - i]))
        .count();
    (prefix, suffix)
}

/// `text` as lines of at most `width` columns, broken at spaces outside backtick quotes
/// (a quoted name, `mean ± σ`, and a word wider than the width stay whole); lines after
/// the first start with `indent`.
/// Written here because the workspace has no wrapping crate and this greedy fill is all
/// a verdict sentence needs.
pub(crate) fn wrap(text: &str, width: usize, indent: &str) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    let mut words: Vec<String> = Vec::new();
    for piece in text.split(' ') {
        match words.last_mut() {
            Some(open) if open.matches('`').count() % 2 == 1 => {
                open.push(' ');
                open.push_str(piece);
            }
            _ => words.push(piece.to_string()),
        }
    }
    for word in words.iter().map(String::as_str) {
        if !line.is_empty() && display_width(&line) + 1 + display_width(word) > width {
            lines.push(std::mem::take(&mut line));
        }
        if line.is_empty() {
            line = format!("{}{word}", if lines.is_empty() { "" } else { indent });
        } else {
            line.push(' ');
            line.push_str(word);
        }
    }
    if !line.is_empty() || lines.is_empty() {
        lines.push(line);
    }
    lines
}

/// How a table is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Frame {
    /// A rule above and below, a double rule under the header (compare's tables).
    Rules,
    /// Nothing but spaces (history's tables).
    Plain,
}

/// A column of a `FitTable`.
#[derive(Debug, Clone)]
pub struct Column {
    /// The column's heading.
    pub header: String,
    pub(crate) right_aligned: bool,
    /// When the table is too wide, columns with a drop rank go, rank 1 first.
    pub(crate) drop_rank: Option<u8>,
    /// Cells may be shortened in the middle once every droppable column is gone
    /// (plain text only: names, labels, commands).
    pub(crate) shrinkable: bool,
    /// Cells holding two names joined by this (`new vs old`): each is shortened on its
    /// own, so both stay told apart.
    pub(crate) joined_by: Option<&'static str>,
}

impl Column {
    /// A column kept whatever the width.
    pub fn kept(header: impl Into<String>) -> Column {
        Column { header: header.into(), right_aligned: false, drop_rank: None, shrinkable: false, joined_by: None }
    }
    /// A column left out when the table does not fit, rank 1 first.
    pub(crate) fn droppable(header: impl Into<String>, rank: u8) -> Column {
        Column { drop_rank: Some(rank), ..Column::kept(header) }
    }
    /// A name-like column, shortened when nothing else can go.
    pub(crate) fn shrinkable(header: impl Into<String>) -> Column {
        Column { shrinkable: true, ..Column::kept(header) }
    }
    /// A shrinkable column of two names joined by `separator`, each shortened alone.
    pub fn pair(header: impl Into<String>, separator: &'static str) -> Column {
        Column { joined_by: Some(separator), ..Column::shrinkable(header) }
    }
    /// The column right-aligned (numbers).
    pub fn right(self) -> Column {
        Column { right_aligned: true, ..self }
    }
}

/// Shortened cells are never narrower than this (or their header).
const MIN_SHRUNK_WIDTH: usize = 12;

/// A table whose columns give way, in a set order, to fit a width.
#[derive(Debug, Clone)]
pub(crate) struct FitTable {
    frame: Frame,
    columns: Vec<Column>,
    rows: Vec<Vec<String>>,
}

impl FitTable {
    pub fn new(frame: Frame, columns: Vec<Column>) -> FitTable {
        FitTable { frame, columns, rows: Vec::new() }
    }

    /// A row, one cell per column.
    pub fn row(&mut self, cells: Vec<String>) {
        debug_assert_eq!(cells.len(), self.columns.len(), "one cell per column");
        self.rows.push(cells);
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The table in at most `width` columns (`None`: all of it), ending in a newline,
    /// followed by a dim note naming the columns left out or shortened to fit.
    pub fn render(&self, width: Option<usize>) -> String {
        let all: Vec<usize> = (0..self.columns.len()).collect();
        let full = self.draw(&all, &self.rows);
        let Some(width) = width else { return full + "\n" };
        if widest_line(&full) <= width {
            return full + "\n";
        }
        let mut kept = all;
        // First what loses nothing: a name-like column the same in every row is said once
        // above the table (`candidate vs baseline: B vs A` over one pair's metrics).
        let mut above = String::new();
        let mut hoisted: Vec<&str> = Vec::new();
        if self.rows.len() > 1 {
            for (i, column) in self.columns.iter().enumerate().filter(|(_, c)| c.shrinkable) {
                // An empty column (history's shift marks, none this time) is no name to say.
                let shared = !strip_ansi(&self.rows[0][i]).trim().is_empty();
                if shared && kept.len() > 1 && self.rows.iter().all(|r| r[i] == self.rows[0][i]) {
                    kept.retain(|&k| k != i);
                    hoisted.push(column.header.as_str());
                    for line in wrap(&format!("{}: {}", column.header, self.rows[0][i]), width, "  ") {
                        above.push_str(&line);
                        above.push('\n');
                    }
                }
            }
        }
        let mut text = self.draw(&kept, &self.rows);
        let mut dropped: Vec<&str> = Vec::new();
        if widest_line(&text) <= width {
            return above + &text + "\n" + &note_hoisted(&dropped, &hoisted, false, width);
        }
        let mut ranks: Vec<(u8, usize)> =
            self.columns.iter().enumerate().filter_map(|(i, c)| c.drop_rank.map(|r| (r, i))).collect();
        ranks.sort();
        for (_, column) in ranks {
            kept.retain(|&i| i != column);
            dropped.push(self.columns[column].header.as_str());
            text = self.draw(&kept, &self.rows);
            if widest_line(&text) <= width {
                return above + &text + "\n" + &note_hoisted(&dropped, &hoisted, false, width);
            }
        }
        let (headers, rows) = self.shrunk(&kept, widest_line(&text).saturating_sub(width));
        let shortened = rows != self.rows;
        text = self.draw_with(&headers, &kept, &rows);
        above + &text + "\n" + &note_hoisted(&dropped, &hoisted, shortened, width)
    }

    /// The headers and rows with the shrinkable columns of `kept` narrowed by `excess`
    /// columns in all (the widest first), down to [`MIN_SHRUNK_WIDTH`].
    fn shrunk(&self, kept: &[usize], mut excess: usize) -> (Vec<String>, Vec<Vec<String>>) {
        let mut widths: Vec<(usize, usize, usize)> = kept
            .iter()
            .filter(|&&i| self.columns[i].shrinkable)
            .map(|&i| {
                let widest =
                    self.rows.iter().map(|r| display_width(&r[i])).chain([self.columns[i].header.width()]).max();
                let widest = widest.unwrap_or(0);
                // Headers are never cut ("cand…ate vs bas…ine" named nothing).
                (i, widest, MIN_SHRUNK_WIDTH.max(self.columns[i].header.width()).min(widest))
            })
            .collect();
        while excess > 0 {
            let Some(w) = widths.iter_mut().filter(|(_, now, floor)| now > floor).max_by_key(|(_, now, _)| *now) else {
                break;
            };
            w.1 -= 1;
            excess -= 1;
        }
        // What each shrinkable column's rows share, per side of a pair (`a vs b`).
        let plain = |i: usize| self.rows.iter().all(|r| !r[i].contains('\x1b'));
        let shared: Vec<(usize, [(usize, usize); 2])> = widths
            .iter()
            .filter(|(i, _, _)| plain(*i) && self.rows.len() > 1)
            .map(|&(i, _, _)| {
                let side = |k: usize| {
                    shared_ends(self.rows.iter().map(move |r| match self.columns[i].joined_by {
                        Some(sep) => {
                            let (a, b) = r[i].split_once(sep).unwrap_or((&r[i], ""));
                            if k == 0 {
                                a
                            } else {
                                b
                            }
                        }
                        None => r[i].as_str(),
                    }))
                };
                (i, [side(0), side(1)])
            })
            .collect();
        let shorten = |text: &str, other: &str, width: usize, ends: Option<(usize, usize)>| {
            if text.width() <= width {
                return text.to_string();
            }
            // Within a pair, what tells the two apart first; then what tells the rows apart.
            let apart_from_other = (!other.is_empty()).then(|| apart(text, other, width)).flatten();
            apart_from_other
                .or_else(|| ends.and_then(|(p, s)| elide_shared(text, p, s, width)))
                .unwrap_or_else(|| abbreviate(text, width))
        };
        let fit = |i: usize, cell: &str, row: bool| match widths.iter().find(|(c, _, _)| *c == i) {
            Some((_, width, _)) if cell.width() > *width => {
                let ends = |k: usize| shared.iter().find(|(c, _)| *c == i).filter(|_| row).map(|(_, e)| e[k]);
                match self.columns[i].joined_by.and_then(|sep| cell.split_once(sep).map(|p| (sep, p))) {
                    // Both names keep their ends: `sleep … 0.02 vs sleep … 0.01`, not `sleep … 0.01`.
                    Some((sep, (a, b))) if *width > sep.width() + 2 => {
                        let room = width - sep.width();
                        let (wa, wb) = (a.width(), b.width());
                        let a_room = if wa + wb <= room { wa } else { (room.div_ceil(2)).max(room.saturating_sub(wb)) };
                        let a_short = shorten(a, b, a_room.min(room), ends(0));
                        let b_short = shorten(b, a, room.saturating_sub(a_short.width()), ends(1));
                        format!("{a_short}{sep}{b_short}")
                    }
                    _ => shorten(cell, "", *width, ends(0)),
                }
            }
            _ => cell.to_string(),
        };
        let headers = self.columns.iter().enumerate().map(|(i, c)| fit(i, &c.header, false)).collect();
        let rows =
            self.rows.iter().map(|row| row.iter().enumerate().map(|(i, cell)| fit(i, cell, true)).collect()).collect();
        (headers, rows)
    }

    fn draw(&self, kept: &[usize], rows: &[Vec<String>]) -> String {
        let headers: Vec<String> = self.columns.iter().map(|c| c.header.clone()).collect();
        self.draw_with(&headers, kept, rows)
    }

    fn draw_with(&self, headers: &[String], kept: &[usize], rows: &[Vec<String>]) -> String {
        let mut table = Table::new();
        match self.frame {
            Frame::Rules => {
                table.load_preset(presets::UTF8_HORIZONTAL_ONLY);
                table.remove_style(TableComponent::HorizontalLines);
                table.remove_style(TableComponent::MiddleIntersections);
            }
            Frame::Plain => {
                table.load_preset(presets::NOTHING);
            }
        }
        // comfy-table counts colour codes as width (its `custom_styling` feature would
        // not): the table is laid out in plain text and the colours put back after.
        table.set_header(kept.iter().map(|&i| strip_ansi(&headers[i])).collect::<Vec<_>>());
        for row in rows {
            table.add_row(kept.iter().map(|&i| strip_ansi(&row[i])).collect::<Vec<_>>());
        }
        for (position, &i) in kept.iter().enumerate() {
            if self.columns[i].right_aligned {
                if let Some(column) = table.column_mut(position) {
                    column.set_cell_alignment(CellAlignment::Right);
                }
            }
        }
        let text = table.to_string();
        recolour(&text, rows, kept, self.frame)
    }
}

/// `text` (a table laid out from the plain cells of `rows`) with each coloured cell's
/// colours put back: every row is one line, after the header (and its rule).
fn recolour(text: &str, rows: &[Vec<String>], kept: &[usize], frame: Frame) -> String {
    if !rows.iter().flatten().any(|cell| cell.contains('\x1b')) {
        return text.to_string();
    }
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let after = if frame == Frame::Rules { 1 } else { 0 };
    let Some(first) = lines.len().checked_sub(rows.len() + after) else { return text.to_string() };
    for (r, row) in rows.iter().enumerate() {
        let Some(line) = lines.get_mut(first + r) else { break };
        let mut cursor = 0;
        for &i in kept {
            let plain = strip_ansi(&row[i]);
            if plain.is_empty() {
                continue;
            }
            let Some(at) = line[cursor..].find(&plain).map(|at| at + cursor) else { break };
            if plain != row[i] {
                line.replace_range(at..at + plain.len(), &row[i]);
                cursor = at + row[i].len();
            } else {
                cursor = at + plain.len();
            }
        }
    }
    let mut out = lines.join("\n");
    if text.ends_with('\n') {
        out.push('\n');
    }
    out
}

fn widest_line(text: &str) -> usize {
    text.lines().map(display_width).max().unwrap_or(0)
}

/// What was left out to fit `width` (columns dropped, said once above the table, or
/// shortened), as one dim line.
fn note_hoisted(dropped: &[&str], hoisted: &[&str], shortened: bool, width: usize) -> String {
    let mut parts = Vec::new();
    if !dropped.is_empty() {
        parts.push(format!("left out {}", dropped.iter().map(|d| format!("`{d}`")).collect::<Vec<_>>().join(", ")));
    }
    if !hoisted.is_empty() {
        parts.push(format!(
            "{} the same in every row, said above",
            hoisted.iter().map(|d| format!("`{d}`")).collect::<Vec<_>>().join(", ")
        ));
    }
    if shortened {
        parts.push("shortened names with …".to_string());
    }
    let text = format!("(to fit {width} columns: {}; --wide shows all)", parts.join("; "));
    wrap(&text, width, " ").iter().map(|line| color::dim(line) + "\n").collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> FitTable {
        let mut t = FitTable::new(
            Frame::Rules,
            vec![
                Column::shrinkable("command"),
                Column::kept("median"),
                Column::droppable("outliers", 1).right(),
                Column::droppable("min … max", 2),
            ],
        );
        t.row(vec![
            "./build-a/db-bench --n 1000000".into(),
            "97.80 ms".into(),
            "0".into(),
            "88.29 ms … 134.64 ms".into(),
        ]);
        t.row(vec![
            "./build-b/db-bench --n 1000000".into(),
            "99.53 ms".into(),
            "12".into(),
            "90.00 ms … 133.90 ms".into(),
        ]);
        t
    }

    #[test]
    fn columns_go_in_their_order_then_names_shorten_in_the_middle() {
        color::init("never");
        let t = table();
        let full = t.render(None);
        assert!(full.contains("outliers") && full.contains("min … max") && !full.contains("left out"), "{full}");
        let full_width = widest_line(&full);
        let one_less = t.render(Some(full_width - 1));
        assert!(one_less.contains("min … max") && !one_less.contains(" outliers "), "{one_less}");
        assert!(one_less.contains("(to fit") && one_less.contains("left out `outliers`"), "{one_less}");
        let narrow = t.render(Some(40));
        assert!(narrow.lines().take(4).all(|l| display_width(l) <= 40), "{narrow}");
        // What the rows share (`./build-`, `/db-bench --n 1000000`) gives way; what
        // differs (`a`, `b`) stays, with both ends.
        assert!(narrow.contains("./build-a…") && narrow.contains("./build-b…"), "what differs kept: {narrow}");
        assert!(narrow.contains("--n 1000000"), "both ends kept: {narrow}");
        assert!(narrow.contains("shortened names with …"), "{narrow}");
        assert!(!narrow.lines().take(5).any(|l| l.contains("min … max")), "{narrow}");
    }

    /// Issue #28: coloured verdicts made an 80-column table 82 wide (comfy-table counted
    /// the escape codes), and `sleep 0.02 vs sleep 0.01` shortened to `sleep … 0.01`.
    #[test]
    fn coloured_cells_take_their_visible_width_and_both_names_stay_told_apart() {
        let mut t = FitTable::new(
            Frame::Rules,
            vec![Column::pair("candidate vs baseline", " vs "), Column::kept("ratio"), Column::kept("verdict")],
        );
        for (candidate, verdict, colour) in
            [("2", "slower", "31"), ("3", "equivalent", "2"), ("4", "inconclusive", "33")]
        {
            t.row(vec![
                format!("sleep 0.0{candidate}0000 --really-long-flag vs sleep 0.010000 --really-long-flag"),
                "1.8891".into(),
                format!("\x1b[{colour}m{verdict}\x1b[0m"),
            ]);
        }
        let text = t.render(Some(60));
        // Rules, header, rule, three rows, rule; then the note (which may wrap as prose).
        for line in text.lines().take(7) {
            assert!(display_width(line) <= 60, "{} columns: {line:?}", display_width(line));
        }
        assert!(text.contains("\x1b[31mslower\x1b[0m"), "the colours are kept: {text:?}");
        let row = strip_ansi(text.lines().nth(3).unwrap());
        let (candidate, baseline) = row.trim().split_once(" vs ").unwrap_or_else(|| panic!("{row}"));
        assert!(candidate.contains("0.02") && baseline.contains("0.01"), "{row}");
        assert!(
            text.lines().take(7).map(display_width).collect::<std::collections::BTreeSet<_>>().len() == 1,
            "{text}"
        );
    }

    /// Issue #39: one pair over every metric is said once above the table, whole, and
    /// the header is never cut (`cand…ate vs bas…ine`); an empty column is never said.
    #[test]
    fn a_column_the_same_in_every_row_is_said_once_above_the_table() {
        color::init("never");
        let pair = "./build-with-a-very-long-name --name hot 30000000 vs ./build-with-a-very-long-name --size 10000000";
        let mut t = FitTable::new(
            Frame::Rules,
            vec![
                Column::pair("candidate vs baseline", " vs "),
                Column::kept("metric"),
                Column::kept("ratio"),
                Column::shrinkable("note"),
            ],
        );
        for metric in ["wall_s", "cpu_s"] {
            t.row(vec![pair.into(), metric.into(), "2.9990".into(), String::new()]);
        }
        let text = t.render(Some(80));
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some("candidate vs baseline: ./build-with-a-very-long-name --name hot 30000000 vs"));
        assert_eq!(lines.next(), Some("  ./build-with-a-very-long-name --size 10000000"));
        assert!(text.contains(" wall_s ") && !text.contains("cand…") && !text.contains("note: "), "{text}");
        assert!(text.contains("`candidate vs baseline` the same in every row, said above"), "{text}");
    }

    #[test]
    fn wrapping_keeps_quoted_names_whole_and_indents_what_follows() {
        assert_eq!(wrap("left out `mean ± σ`, `cpu`", 14, " "), ["left out", " `mean ± σ`,", " `cpu`"]);
        assert_eq!(wrap("short", 80, "  "), ["short"]);
    }

    #[test]
    fn abbreviation_counts_terminal_columns() {
        assert_eq!(abbreviate("abcdefghij", 10), "abcdefghij");
        assert_eq!(abbreviate("abcdefghij", 5), "ab…ij");
        assert!(display_width(&abbreviate("日本語のコマンド名前", 7)) <= 7);
        assert_eq!(display_width("\x1b[31mred\x1b[0m"), 3);
    }
}
