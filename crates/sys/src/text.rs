//! Text from outside (command names, labels, file contents) made safe to print.

/// Text made safe for a terminal: control characters — a newline, an escape sequence —
/// and the bidirectional controls (which reorder what follows them on the line: a name
/// could display as another, a path hide its end) are shown as escapes (`\u{202e}`),
/// never acted on.
pub fn escape(text: &str) -> String {
    escape_cow(text).into_owned()
}

/// [`escape`], borrowing `text` when it has nothing to escape (nearly always: a flame
/// graph's 150,000 names and tooltips were each copied for nothing).
pub fn escape_cow(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return std::borrow::Cow::Borrowed(text);
    }
    text.chars().map(|c| if needs_escape(c) { c.escape_default().to_string() } else { c.to_string() }).collect()
}

/// [`escape`] of a string of one's own, given back when it has nothing to escape.
pub fn escape_owned(text: String) -> String {
    if let std::borrow::Cow::Owned(escaped) = escape_cow(&text) {
        return escaped;
    }
    text
}

/// Control characters (C0, DEL, C1) and Unicode's Bidi_Control characters: ALM, LRM,
/// RLM, the embeddings and overrides U+202A–U+202E, the isolates U+2066–U+2069.
fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// A message on one line: each line break outside backtick quotes ends a clause (`; `,
/// or a space after a colon), so a command's stderr lines quoted in an error read as
/// clauses, never as a literal `\n`; a line break inside a quoted value stays, for
/// [`escape`] to show it as the value's own.
pub fn one_line(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut quoted = false;
    let mut pending_break = false;
    for c in text.chars() {
        if !quoted && (c == '\n' || c == '\r') {
            pending_break = true;
            continue;
        }
        if pending_break {
            if c == ' ' || c == '\t' {
                continue;
            }
            pending_break = false;
            let kept = out.trim_end().len();
            out.truncate(kept);
            if !out.is_empty() {
                out.push_str(if out.ends_with(':') || out.ends_with(';') { " " } else { "; " });
            }
        }
        if c == '`' {
            quoted = !quoted;
        }
        out.push(c);
    }
    out
}

/// What is wrong with a regular expression, on one line: the regex crate quotes the
/// pattern over several lines with a caret under the fault, and its last line says what.
pub fn regex_error(err: &regex::Error) -> String {
    let text = err.to_string();
    text.lines().last().unwrap_or_default().trim_start_matches("error: ").to_string()
}

/// An error and its causes on one line, `outer: cause: cause`, as anyhow's `{:#}` but
/// without repeating a cause the message above already quotes: area errors say
/// "cannot read FILE: {source}" and keep the `io::Error` as their `#[source]` too.
pub fn chain_line<'a>(mut chain: impl Iterator<Item = &'a (dyn std::error::Error + 'static)>) -> String {
    let mut line = chain.next().map(|e| e.to_string()).unwrap_or_default();
    for cause in chain {
        let text = cause.to_string();
        if !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_breaks_become_clauses_and_never_a_literal_backslash_n() {
        let line = one_line("`sh -c x` exited with code 3; its last stderr lines:\noops\r\n  second line\n");
        assert_eq!(line, "`sh -c x` exited with code 3; its last stderr lines: oops; second line");
        assert!(!escape(&line).contains("\\n"), "{line}");
    }

    #[test]
    fn a_line_break_inside_a_quoted_value_is_the_values_and_shown_escaped_once() {
        let line = one_line("program `a\nb` not found\nsee --help");
        assert_eq!(escape(&line), "program `a\\nb` not found; see --help");
    }

    #[test]
    fn controls_and_bidi_overrides_are_shown_escaped() {
        assert_eq!(escape("plain é 名前"), "plain é 名前");
        assert_eq!(escape("a\x1b]0;x\x07b\n"), "a\\u{1b}]0;x\\u{7}b\\n");
        assert_eq!(
            escape("ab\u{202E}cd\u{2066}\u{2069}\u{200F}\u{9b}"),
            "ab\\u{202e}cd\\u{2066}\\u{2069}\\u{200f}\\u{9b}"
        );
    }
}
