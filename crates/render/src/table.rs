//! Terminal tables that fit the terminal. A table wider than the terminal first loses
//! its least needed columns, in the order each table gives (its documented drop order,
//! docs/output.md), then has its name-like columns shortened in the middle ("./build-a/…
//! --n 1e6"), and says what it left out. Piped, or with `--wide`, tables keep their full
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
/// beside `sle…0.01…lag`, where cutting both in the middle gave the same text twice.
pub(crate) fn abbreviate_apart(text: &str, other: &str, width: usize) -> String {
    if text.width() <= width {
        return text.to_string();
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
        return abbreviate(text, width);
    }
    let head: String = chars[..prefix].iter().collect();
    let tail: String = chars[chars.len() - suffix..].iter().collect();
    let room = width - differ.width();
    let head_room = head.width().min(room.div_ceil(2).max(room.saturating_sub(tail.width())));
    let head = abbreviate(&head, head_room);
    let tail = abbreviate(&tail, room - head.width());
    format!("{head}{differ}{tail}")
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
        let mut dropped: Vec<&str> = Vec::new();
        let mut ranks: Vec<(u8, usize)> =
            self.columns.iter().enumerate().filter_map(|(i, c)| c.drop_rank.map(|r| (r, i))).collect();
        ranks.sort();
        let mut text = full;
        for (_, column) in ranks {
            kept.retain(|&i| i != column);
            dropped.push(self.columns[column].header.as_str());
            text = self.draw(&kept, &self.rows);
            if widest_line(&text) <= width {
                return text + "\n" + &note(&dropped, false, width);
            }
        }
        let (headers, rows) = self.shrunk(&kept, widest_line(&text) - width);
        let shortened = rows != self.rows;
        text = self.draw_with(&headers, &kept, &rows);
        text + "\n" + &note(&dropped, shortened, width)
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
                (i, widest, MIN_SHRUNK_WIDTH.min(widest))
            })
            .collect();
        while excess > 0 {
            let Some(w) = widths.iter_mut().filter(|(_, now, floor)| now > floor).max_by_key(|(_, now, _)| *now) else {
                break;
            };
            w.1 -= 1;
            excess -= 1;
        }
        let fit = |i: usize, cell: &str| match widths.iter().find(|(c, _, _)| *c == i) {
            Some((_, width, _)) => {
                match self.columns[i].joined_by.and_then(|sep| cell.split_once(sep).map(|p| (sep, p))) {
                    // Both names keep their ends: `sleep … 0.02 vs sleep … 0.01`, not `sleep … 0.01`.
                    Some((sep, (a, b))) if *width > sep.width() + 2 => {
                        let room = width - sep.width();
                        let (wa, wb) = (a.width(), b.width());
                        let a_room = if wa + wb <= room { wa } else { (room.div_ceil(2)).max(room.saturating_sub(wb)) };
                        let a_short = abbreviate_apart(a, b, a_room.min(room));
                        let b_short = abbreviate_apart(b, a, room - a_short.width());
                        format!("{a_short}{sep}{b_short}")
                    }
                    _ => abbreviate(cell, *width),
                }
            }
            None => cell.to_string(),
        };
        let headers = self.columns.iter().enumerate().map(|(i, c)| fit(i, &c.header)).collect();
        let rows = self.rows.iter().map(|row| row.iter().enumerate().map(|(i, cell)| fit(i, cell)).collect()).collect();
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

/// What was left out to fit `width`, as one dim line.
fn note(dropped: &[&str], shortened: bool, width: usize) -> String {
    let mut parts = Vec::new();
    if !dropped.is_empty() {
        parts.push(format!("left out {}", dropped.iter().map(|d| format!("`{d}`")).collect::<Vec<_>>().join(", ")));
    }
    if shortened {
        parts.push("shortened names with …".to_string());
    }
    color::dim(&format!("(to fit {width} columns: {}; --wide shows all)", parts.join("; "))) + "\n"
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
        assert!(narrow.contains("./build-a/db-…") && narrow.contains("--n 1000000"), "both ends kept: {narrow}");
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
        for (verdict, colour) in [("slower", "31"), ("equivalent", "2"), ("inconclusive", "33")] {
            t.row(vec![
                "sleep 0.020000 --really-long-flag vs sleep 0.010000 --really-long-flag".into(),
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

    #[test]
    fn abbreviation_counts_terminal_columns() {
        assert_eq!(abbreviate("abcdefghij", 10), "abcdefghij");
        assert_eq!(abbreviate("abcdefghij", 5), "ab…ij");
        assert!(display_width(&abbreviate("日本語のコマンド名前", 7)) <= 7);
        assert_eq!(display_width("\x1b[31mred\x1b[0m"), 3);
    }
}
