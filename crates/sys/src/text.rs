//! Text from outside (command names, labels, file contents) made safe to print.

/// Text made safe for a terminal: control characters — a newline, an escape sequence —
/// are shown as escapes, never acted on.
pub fn escape(text: &str) -> String {
    if !text.chars().any(char::is_control) {
        return text.to_string();
    }
    text.chars().map(|c| if c.is_control() { c.escape_default().to_string() } else { c.to_string() }).collect()
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
