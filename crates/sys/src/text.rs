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
