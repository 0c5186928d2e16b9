//! Turning what the user typed into something to execute: command templates with
//! `{parameter}` placeholders expanded, split like a shell splits words (or handed to a
//! shell: always with `--shell`, never with `-N`, and by default whenever the text has
//! shell syntax, which split into words would run literally), the program resolved on
//! PATH, and a failure before anything runs when it does not exist or is not executable.

pub mod error;

pub use error::{CommandError, ScriptError};
use perflab_model::CommandSpec;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

/// How commands are executed: directly (split into words) or through a shell.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Shell {
    /// Directly, unless a command has shell syntax: then every command of the
    /// experiment runs through `/bin/sh -c`, so that all bear the shell's start-up cost.
    #[default]
    Auto,
    /// Never through a shell (`-N`, `--shell=none`, `shell = false`): a command with
    /// shell syntax is refused rather than run with its operators as arguments.
    Never,
    /// Always through this shell: its program and arguments, then `-c TEXT`.
    Always(Vec<String>),
}

/// `/bin/sh`, the shell `Auto` falls back to and `--shell=default` names.
pub const DEFAULT_SHELL: &str = "/bin/sh";

impl Shell {
    /// The shell a command line or suite names: `none` is [`Shell::Never`], `default`
    /// `/bin/sh`, anything else a shell's program with optional arguments
    /// (`bash --norc`), as hyperfine's `--shell` takes it; nothing named is [`Shell::Auto`].
    pub fn named(name: Option<&str>) -> Result<Shell, CommandError> {
        match name.map(str::trim) {
            None => Ok(Shell::Auto),
            Some("none") => Ok(Shell::Never),
            Some("default") => Ok(Shell::Always(vec![DEFAULT_SHELL.to_string()])),
            Some(text) => match shell_words::split(text) {
                Ok(words) if !words.is_empty() => Ok(Shell::Always(words)),
                _ => Err(CommandError::BadShell(text.to_string())),
            },
        }
    }
}

/// A command that runs through the shell although no shell was asked for: what made it
/// (said to the user as a note before anything runs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellReason {
    /// The command line as typed.
    pub command: String,
    /// The first shell syntax found in it, e.g. `>` or `$(`.
    pub syntax: String,
}

impl ShellReason {
    /// The note shown before the runs.
    pub fn note(&self) -> String {
        format!(
            "`{}` has shell syntax ({}): running every command with {DEFAULT_SHELL} -c (so all bear its start-up cost); -N refuses such commands instead",
            self.command, self.syntax
        )
    }
}

/// Words a POSIX shell treats specially at the start of a command (reserved words and
/// the builtins that exist only inside a shell): run directly, they would fail or mean
/// something else.
const SHELL_WORDS: [&str; 22] = [
    "if", "then", "elif", "else", "fi", "for", "while", "until", "do", "done", "case", "esac", "!", "{", "}", "[[",
    "function", "cd", "export", "source", ".", "eval",
];

/// The first piece of shell syntax in `text` that splitting into words would pass on
/// literally: operators (`|`, `||`, `&`, `&&`, `;`, `<`, `>`, `(`, `)`), expansions
/// (`$`, `$(`, backticks, a leading `~`), globs (`*`, `?`, `[`), a comment, a line
/// break, a leading variable assignment, or a reserved word or shell builtin first;
/// `None` for a plain command.
///
/// Written by hand: the crates that split words (shell-words, shlex) do not report
/// operators, and a full shell parser (yash-syntax, brush-parser) is far more than a
/// yes/no question needs. Quoting follows POSIX: nothing is special inside single
/// quotes; inside double quotes `$` and backticks still expand; a backslash escapes
/// the next character outside single quotes.
pub(crate) fn shell_syntax(text: &str) -> Option<String> {
    #[derive(PartialEq)]
    enum Quote {
        None,
        Single,
        Double,
    }
    let chars: Vec<char> = text.chars().collect();
    let mut quote = Quote::None;
    let mut word_start = true;
    let mut first_word = true;
    let mut word = String::new();
    let mut i = 0;
    let pair = |i: usize, c: char| chars.get(i + 1) == Some(&c);
    while i < chars.len() {
        let c = chars[i];
        match quote {
            Quote::Single => {
                if c == '\'' {
                    quote = Quote::None;
                }
            }
            Quote::Double => match c {
                '\\' => i += 1,
                '"' => quote = Quote::None,
                '$' => return Some(if pair(i, '(') { "$(".into() } else { "$".into() }),
                '`' => return Some("`".into()),
                _ => {}
            },
            Quote::None => {
                if c.is_whitespace() {
                    if c == '\n' {
                        return Some("a line break".into());
                    }
                    if !word_start && first_word {
                        if SHELL_WORDS.contains(&word.as_str()) {
                            return Some(format!("`{word}`"));
                        }
                        first_word = false;
                    }
                    word_start = true;
                    i += 1;
                    continue;
                }
                let found = match c {
                    '\\' => {
                        i += 1;
                        None
                    }
                    '\'' => {
                        quote = Quote::Single;
                        None
                    }
                    '"' => {
                        quote = Quote::Double;
                        None
                    }
                    '|' | '&' | '<' | '>' if pair(i, c) => Some(format!("{c}{c}")),
                    '|' | '&' | ';' | '<' | '>' | '(' | ')' | '*' | '?' | '[' => Some(c.to_string()),
                    '$' if pair(i, '(') => Some("$(".into()),
                    '$' => Some("$".into()),
                    '`' => Some("`".into()),
                    '~' | '#' if word_start => Some(c.to_string()),
                    '=' if first_word && !word.is_empty() && is_name(&word) => Some(format!("{word}=")),
                    _ => None,
                };
                if found.is_some() {
                    return found;
                }
                if first_word {
                    word.push(c);
                }
                word_start = false;
            }
        }
        i += 1;
    }
    (first_word && quote == Quote::None && SHELL_WORDS.contains(&word.as_str())).then(|| format!("`{word}`"))
}

/// A shell variable name: a letter or `_`, then letters, digits or `_`.
fn is_name(word: &str) -> bool {
    let mut chars = word.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Build the command specs; names default to the command text, and a command given
/// several times without a name (an A/A check) is named `TEXT #1`, `TEXT #2`, ...
/// Two commands named alike on purpose are an error. With [`Shell::Auto`] a command
/// with shell syntax sends every command through `/bin/sh -c`; the returned reason says
/// which (for a note), and with [`Shell::Never`] such a command is an error.
pub fn parse_commands(
    texts: &[String],
    names: &[String],
    shell: &Shell,
) -> Result<(Vec<CommandSpec>, Option<ShellReason>), CommandError> {
    if names.len() > texts.len() {
        return Err(CommandError::MoreNamesThanCommands { names: names.len(), commands: texts.len() });
    }
    let found = texts.iter().find_map(|t| shell_syntax(t).map(|syntax| ShellReason { command: t.clone(), syntax }));
    let (through, reason) = match (shell, found) {
        (Shell::Always(words), _) => (Some(words.clone()), None),
        (Shell::Never, Some(r)) => {
            return Err(CommandError::ShellSyntaxRefused { command: r.command, syntax: r.syntax })
        }
        (Shell::Never, None) | (Shell::Auto, None) => (None, None),
        (Shell::Auto, Some(r)) => (Some(vec![DEFAULT_SHELL.to_string()]), Some(r)),
    };
    let mut specs = Vec::with_capacity(texts.len());
    for (i, text) in texts.iter().enumerate() {
        let argv = match &through {
            Some(words) => words.iter().cloned().chain(["-c".to_string(), text.clone()]).collect(),
            None => shell_words::split(text)
                .map_err(|source| CommandError::Unsplittable { command: text.clone(), source })?,
        };
        if argv.is_empty() {
            return Err(CommandError::EmptyCommand(i + 1));
        }
        let name = match names.get(i) {
            Some(name) => name.clone(),
            None => {
                let copies = texts.iter().filter(|t| *t == text).count();
                let nth = texts[..=i].iter().filter(|t| *t == text).count();
                if copies > 1 {
                    format!("{text} #{nth}")
                } else {
                    text.clone()
                }
            }
        };
        specs.push(CommandSpec { name, argv, command_line: text.clone(), ..CommandSpec::default() });
    }
    let mut seen = std::collections::HashSet::new();
    for spec in &specs {
        if !seen.insert(spec.name.as_str()) {
            return Err(CommandError::DuplicateName(spec.name.clone()));
        }
    }
    Ok((specs, reason))
}

/// The command line of `words` typed after `stat CMD…` or `doctor CMD…`: one word is a
/// command line to split like a shell; several are the argv itself, quoted so that
/// splitting gives them back — or, for a shell, the words of its script.
pub fn command_text(words: &[String], through_shell: bool) -> String {
    match words {
        [single] => single.clone(),
        many if through_shell => many.join(" "),
        many => shell_words::join(many),
    }
}

/// Resolve a program name to an executable path, like execvp would.
pub fn resolve_program(program: &str) -> Result<PathBuf, CommandError> {
    let path = if program.contains('/') {
        let p = PathBuf::from(program);
        if !p.exists() {
            return Err(CommandError::NoSuchProgram(program.to_string()));
        }
        p
    } else {
        which::which(program).map_err(|source| CommandError::NotOnPath { program: program.to_string(), source })?
    };
    let meta = match std::fs::metadata(&path) {
        Ok(meta) => meta,
        Err(source) => return Err(CommandError::Uninspectable { path, source }),
    };
    if meta.is_dir() {
        return Err(CommandError::Directory(path));
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Err(CommandError::NotExecutable(path));
    }
    Ok(path)
}

/// True when `s` can name a `{placeholder}`: non-empty ASCII letters, digits, `_` and `-`.
pub fn is_placeholder_name(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Walk a template: `{name}` is a placeholder, `{{name}}` an escaped one; braces
/// around anything that is not a plain name (awk's `{print $1}`) are plain text.
/// `lookup` gives the value of the placeholders substituted now; the others, and
/// their escapes, are kept for a later pass. Also returns the placeholders seen.
pub fn expand(template: &str, lookup: &dyn Fn(&str) -> Option<String>) -> (String, Vec<String>) {
    let mut out = String::with_capacity(template.len());
    let mut seen = Vec::new();
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let after = &rest[start..];
        let escaped = after.starts_with("{{");
        let inner = &after[if escaped { 2 } else { 1 }..];
        let close = if escaped { "}}" } else { "}" };
        // Only a run of name characters can be a placeholder: looking no further than
        // it keeps the walk linear (a text of 32,000 `{` once took seconds).
        let name_len = inner.bytes().take_while(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-').count();
        match Some(name_len).filter(|&end| end > 0 && inner[end..].starts_with(close)) {
            Some(end) => {
                let name = &inner[..end];
                let whole = &after[..(after.len() - inner.len()) + end + close.len()];
                match (escaped, lookup(name)) {
                    (true, Some(_)) => out.push_str(&format!("{{{name}}}")),
                    (false, Some(value)) => out.push_str(&value),
                    (_, None) => out.push_str(whole),
                }
                if !escaped {
                    seen.push(name.to_string());
                }
                rest = &inner[end + close.len()..];
            }
            None => {
                out.push('{');
                rest = &after[1..];
            }
        }
    }
    out.push_str(rest);
    (out, seen)
}

/// `template` with the placeholders `lookup` answers replaced by their values quoted
/// for a POSIX shell where they stand — outside quotes as one word
/// (`shell_words::quote`), inside double quotes with `$`, `` ` ``, `"` and `\`
/// backslashed, inside single quotes with `'` closed, escaped and reopened — so a value
/// is always data, never code: split into words (a template without shell syntax) it is
/// one argument, and a shell (a template with shell syntax, or a hook) reads it as the
/// text it is. A plain value (letters, digits, `-`, `.`, `/`, …) is unchanged.
pub fn expand_quoted(template: &str, lookup: &dyn Fn(&str) -> Option<String>) -> String {
    let quoting = std::cell::RefCell::new(QuoteTracker::default());
    let fed = std::cell::Cell::new(0usize);
    // `expand` emits the template's own text before each placeholder; the tracker reads
    // the template up to the placeholder's position (each byte once).
    let positions = placeholder_positions(template);
    let next = std::cell::Cell::new(0usize);
    let (out, _) = expand(template, &|name| {
        let index = next.get();
        next.set(index + 1);
        let at = positions.get(index).copied().unwrap_or(template.len());
        if at > fed.get() {
            quoting.borrow_mut().feed(&template[fed.get()..at]);
            fed.set(at);
        }
        lookup(name).map(|value| quoting.borrow().quote(&value))
    });
    out
}

/// Where each `{`…`}` that [`expand`] takes for a placeholder (escaped or not) starts, in
/// the order it asks for them.
fn placeholder_positions(template: &str) -> Vec<usize> {
    let mut positions = Vec::new();
    // Walk as `expand` does, recording the offset of each placeholder asked for.
    let mut rest = template;
    let mut offset = 0;
    while let Some(start) = rest.find('{') {
        let after = &rest[start..];
        let escaped = after.starts_with("{{");
        let inner = &after[if escaped { 2 } else { 1 }..];
        let close = if escaped { "}}" } else { "}" };
        let name_len = inner.bytes().take_while(|b| b.is_ascii_alphanumeric() || *b == b'_' || *b == b'-').count();
        if name_len > 0 && inner[name_len..].starts_with(close) {
            positions.push(offset + start);
            let consumed = start + (after.len() - inner.len()) + name_len + close.len();
            offset += consumed;
            rest = &rest[consumed..];
        } else {
            offset += start + 1;
            rest = &rest[start + 1..];
        }
    }
    positions
}

/// The quoting a POSIX shell is in at a point of a text, read a piece at a time.
#[derive(Debug, Default)]
struct QuoteTracker {
    inside: Quoting,
    escaped: bool,
}

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
enum Quoting {
    #[default]
    Unquoted,
    Single,
    Double,
}

impl QuoteTracker {
    fn feed(&mut self, text: &str) {
        for c in text.chars() {
            if self.escaped {
                self.escaped = false;
                continue;
            }
            self.inside = match (self.inside, c) {
                (Quoting::Single, '\'') => Quoting::Unquoted,
                (Quoting::Single, _) => Quoting::Single,
                (state, '\\') => {
                    self.escaped = true;
                    state
                }
                (Quoting::Unquoted, '\'') => Quoting::Single,
                (Quoting::Unquoted, '"') => Quoting::Double,
                (Quoting::Double, '"') => Quoting::Unquoted,
                (state, _) => state,
            };
        }
    }

    fn quote(&self, value: &str) -> String {
        match self.inside {
            Quoting::Unquoted => shell_words::quote(value).into_owned(),
            Quoting::Single => value.replace('\'', "'\\''"),
            Quoting::Double => {
                let mut out = String::with_capacity(value.len());
                for c in value.chars() {
                    if matches!(c, '$' | '`' | '"' | '\\') {
                        out.push('\\');
                    }
                    out.push(c);
                }
                out
            }
        }
    }
}

/// Every combination of parameter values, first parameter varying slowest.
/// The most commands parameters may expand to (the commands of a comparison, the
/// benchmarks of a suite): each is something perflab will run, so more is surely a
/// mistake — and the expansion itself would take memory without bound (9 parameters of
/// 10 values in a 432-byte suite are 10⁹ benchmarks). Counted before anything is
/// expanded; documented in docs/inputs.md.
pub const MAX_COMBINATIONS: u64 = 10_000;

/// How many combinations `params` make, without making them (saturating).
pub fn combination_count(params: &[(String, Vec<String>)]) -> u64 {
    params.iter().fold(1u64, |n, (_, values)| n.saturating_mul(values.len() as u64))
}

/// `count` commands from `templates` templates and `params`: an error above
/// [`MAX_COMBINATIONS`] that says how the count comes about.
pub fn check_combination_count(templates: u64, params: &[(String, Vec<String>)]) -> Result<(), CommandError> {
    let count = combination_count(params).saturating_mul(templates);
    if count <= MAX_COMBINATIONS {
        return Ok(());
    }
    let mut factors: Vec<String> = params.iter().map(|(name, v)| format!("{} values of {name}", v.len())).collect();
    if templates > 1 {
        factors.insert(0, format!("{templates} commands"));
    }
    Err(CommandError::TooManyCombinations {
        count: if count == u64::MAX { format!("more than {}", u64::MAX) } else { count.to_string() },
        product: factors.join(" × "),
        limit: MAX_COMBINATIONS,
    })
}

/// Every combination of the parameters' values (`-L`), the last parameter varying fastest;
/// one combination is one (name, value) per parameter, in the order given.
pub fn cartesian(params: &[(String, Vec<String>)]) -> Vec<Vec<(String, String)>> {
    let mut combos: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for (key, values) in params {
        combos = combos
            .into_iter()
            .flat_map(|c| {
                values.iter().map(move |v| {
                    let mut next = c.clone();
                    next.push((key.clone(), v.clone()));
                    next
                })
            })
            .collect();
    }
    combos
}

/// One value for each parameter: `(name, value)` pairs.
pub type Combination = Vec<(String, String)>;

/// The most values a parameter scan may have: more is surely a typo of a step.
const MAX_SCAN_VALUES: usize = 10_000;

/// The values of `-P NAME LO HI [-D STEP]`: LO, LO+STEP, … up to HI. Integers stay
/// integers; with a decimal step the values are printed with the step's decimals.
pub fn scan_values(low: &str, high: &str, step: Option<&str>) -> Result<Vec<String>, CommandError> {
    let parse = |text: &str, what: &'static str| -> Result<f64, CommandError> {
        text.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| CommandError::ScanNotANumber { what, text: text.to_string() })
    };
    let (lo, hi) = (parse(low, "--parameter-scan's start")?, parse(high, "--parameter-scan's end")?);
    let step_text = step.unwrap_or("1");
    let delta = parse(step_text, "--parameter-step-size")?;
    if delta <= 0.0 {
        return Err(CommandError::ScanStepNotPositive(step_text.to_string()));
    }
    if hi < lo {
        return Err(CommandError::ScanDescending { low: low.to_string(), high: high.to_string() });
    }
    let count = ((hi - lo) / delta + 1e-9).floor() as usize + 1;
    if count > MAX_SCAN_VALUES {
        return Err(CommandError::ScanTooLong {
            low: low.to_string(),
            high: high.to_string(),
            step: step_text.to_string(),
            count,
            max: MAX_SCAN_VALUES,
        });
    }
    let decimals = [low, high, step_text].iter().filter_map(|t| t.trim().split_once('.')).map(|(_, f)| f.len()).max();
    Ok((0..count)
        .map(|i| {
            let v = lo + i as f64 * delta;
            match decimals {
                Some(d) => format!("{v:.d$}"),
                None => format!("{}", v.round() as i64),
            }
        })
        .collect())
}

/// Every command template expanded for every combination of `parameters` (the first
/// parameter varying slowest), with its name and hooks expanded alike. Returns, per
/// expanded command, the index of its template and the substituted texts; a placeholder
/// that is not a parameter is an error (write `{{name}}` for literal braces).
pub fn expand_parameters(
    templates: &[String],
    parameters: &[(String, Vec<String>)],
) -> Result<Vec<(usize, Combination)>, CommandError> {
    for (name, values) in parameters {
        if !is_placeholder_name(name) {
            return Err(CommandError::BadParameterName(name.clone()));
        }
        if values.is_empty() || values.iter().any(String::is_empty) {
            return Err(CommandError::EmptyParameterValues(name.clone()));
        }
    }
    if !parameters.is_empty() {
        for template in templates {
            if let Some(unknown) =
                expand(template, &|_| None).1.iter().find(|p| !parameters.iter().any(|(n, _)| n == *p))
            {
                return Err(CommandError::UnknownPlaceholder {
                    placeholder: unknown.clone(),
                    template: template.clone(),
                });
            }
        }
    }
    check_combination_count(templates.len() as u64, parameters)?;
    let combinations = cartesian(parameters);
    Ok((0..templates.len()).flat_map(|i| combinations.iter().map(move |c| (i, c.clone()))).collect())
}

/// `template` with the parameters of `combination` substituted (escaped `{{name}}`
/// becomes `{name}`).
pub fn substitute(template: &str, combination: &[(String, String)]) -> String {
    if combination.is_empty() {
        return template.to_string();
    }
    expand(template, &|name| combination.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())).0
}

/// Run a helper script (a build step, a suite's setup or cleanup) through `sh -c`,
/// untimed, in `dir` (default: here). With `show_output` its output is passed through;
/// otherwise it is discarded and the last line it wrote to stderr explains a failure.
pub fn run_shell(script: &str, dir: Option<&std::path::Path>, show_output: bool) -> Result<(), ScriptError> {
    use std::process::{Command, Stdio};
    let mut command = Command::new("/bin/sh");
    command.args(["-c", script]).stdin(Stdio::null());
    if let Some(dir) = dir {
        command.current_dir(dir);
    }
    if !show_output {
        command.stdout(Stdio::null()).stderr(Stdio::piped());
    }
    let out = command.output().map_err(ScriptError::Spawn)?;
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let last_line = stderr.lines().rev().find(|l| !l.trim().is_empty()).map(|l| l.trim().to_string());
    Err(ScriptError::Failed { script: script.to_string(), status: out.status, last_line })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_expand_every_template_for_every_combination() {
        let params = vec![
            ("cc".to_string(), vec!["gcc".to_string(), "clang".to_string()]),
            ("n".to_string(), vec!["1".to_string()]),
        ];
        let templates = vec!["{cc} -O{n} a.c".to_string(), "awk '{print $1}' {cc}".to_string()];
        let expanded = expand_parameters(&templates, &params).unwrap();
        let texts: Vec<String> = expanded.iter().map(|(i, c)| substitute(&templates[*i], c)).collect();
        assert_eq!(texts, ["gcc -O1 a.c", "clang -O1 a.c", "awk '{print $1}' gcc", "awk '{print $1}' clang"]);
        let err = expand_parameters(&["x {m}".to_string()], &params).unwrap_err().to_string();
        assert!(err.contains("`{m}` in `x {m}` is not a parameter"), "{err}");
        // Without parameters every template stands as it is.
        assert_eq!(expand_parameters(&templates, &[]).unwrap(), vec![(0, vec![]), (1, vec![])]);
        assert_eq!(
            substitute("{x} {{cc}}", &params[..1].iter().map(|(k, v)| (k.clone(), v[0].clone())).collect::<Vec<_>>()),
            "{x} {cc}"
        );
    }

    #[test]
    fn scans_count_in_steps_and_refuse_nonsense() {
        assert_eq!(scan_values("1", "4", None).unwrap(), ["1", "2", "3", "4"]);
        assert_eq!(scan_values("0", "1", Some("0.25")).unwrap(), ["0.00", "0.25", "0.50", "0.75", "1.00"]);
        assert_eq!(scan_values("10", "20", Some("5")).unwrap(), ["10", "15", "20"]);
        assert!(scan_values("5", "1", None).unwrap_err().to_string().contains("smaller value first"));
        assert!(scan_values("1", "x", None).unwrap_err().to_string().contains("not a number"));
        assert!(scan_values("1", "2", Some("0")).unwrap_err().to_string().contains("must be positive"));
        assert!(scan_values("0", "1e9", None).unwrap_err().to_string().contains("at most"));
    }

    #[test]
    fn helper_scripts_report_their_last_error_line() {
        assert!(run_shell("true", None, false).is_ok());
        let err = run_shell("echo first >&2; echo 'the reason' >&2; exit 4", None, false).unwrap_err().to_string();
        assert!(err.contains("exit status: 4") && err.ends_with("the reason"), "{err}");
        let dir = std::env::temp_dir().join(format!("perflab-shell-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("marker"), "").unwrap();
        assert!(run_shell("test -f marker", Some(&dir), false).is_ok(), "runs in the given directory");
        std::fs::remove_dir_all(&dir).ok();
    }

    fn parse(
        texts: &[&str],
        names: &[&str],
        shell: &Shell,
    ) -> Result<(Vec<CommandSpec>, Option<ShellReason>), CommandError> {
        let texts: Vec<String> = texts.iter().map(|t| t.to_string()).collect();
        let names: Vec<String> = names.iter().map(|t| t.to_string()).collect();
        parse_commands(&texts, &names, shell)
    }

    #[test]
    fn values_are_quoted_for_the_shell_where_they_stand() {
        let value = |v: &'static str| move |name: &str| (name == "x").then(|| v.to_string());
        let hostile = "$(touch PWNED) `id`; a|b 'q' \"d\" \\";
        // Unquoted: one word, whatever it holds; split gives the value back.
        let text = expand_quoted("echo {x} --n={x}", &value(hostile));
        assert_eq!(shell_words::split(&text).unwrap(), ["echo", hostile, &format!("--n={hostile}")]);
        assert_eq!(shell_syntax(&text), None, "{text}");
        // Inside double and single quotes, the quotes are not broken out of.
        let text = expand_quoted("echo \"a {x} b\" 'c {x} d' | cat", &value(hostile));
        assert_eq!(
            shell_words::split(&text).unwrap()[..3],
            ["echo".to_string(), format!("a {hostile} b"), format!("c {hostile} d")]
        );
        // Plain values are unchanged; escaped placeholders and others are kept.
        assert_eq!(expand_quoted("run {x} {{x}} {y}", &value("1000")), "run 1000 {x} {y}");
        assert_eq!(expand_quoted("awk '{print $1}' {x}", &value("a.txt")), "awk '{print $1}' a.txt");
    }

    #[test]
    fn splits_like_a_shell() {
        let (specs, reason) = parse(&["echo 'a b' c"], &[], &Shell::Auto).unwrap();
        assert_eq!(specs[0].argv, ["echo", "a b", "c"]);
        assert_eq!(specs[0].name, "echo 'a b' c");
        assert_eq!(reason, None);
    }

    #[test]
    fn shell_mode_passes_text_to_the_shell() {
        let (specs, _) = parse(&["echo $HOME"], &["x"], &Shell::named(Some("/bin/sh")).unwrap()).unwrap();
        assert_eq!(specs[0].argv, ["/bin/sh", "-c", "echo $HOME"]);
        assert_eq!(specs[0].name, "x");
        let (specs, _) = parse(&["true"], &[], &Shell::named(Some("bash --norc")).unwrap()).unwrap();
        assert_eq!(specs[0].argv, ["bash", "--norc", "-c", "true"]);
        assert_eq!(Shell::named(Some("none")).unwrap(), Shell::Never);
        assert_eq!(Shell::named(Some("default")).unwrap(), Shell::Always(vec![DEFAULT_SHELL.into()]));
        assert_eq!(Shell::named(None).unwrap(), Shell::Auto);
        assert!(Shell::named(Some("  ")).is_err() && Shell::named(Some("sh 'x")).is_err());
    }

    #[test]
    fn shell_syntax_is_found_outside_quotes_only() {
        for (text, syntax) in [
            ("echo hi > out.txt", ">"),
            ("a | b", "|"),
            ("a || b", "||"),
            ("a && b", "&&"),
            ("sleep 1 &", "&"),
            ("a; b", ";"),
            ("wc -l < in", "<"),
            ("cat <<EOF", "<<"),
            ("echo $(date)", "$("),
            ("echo $HOME", "$"),
            ("echo \"$HOME\"", "$"),
            ("echo `date`", "`"),
            ("ls *.c", "*"),
            ("ls file?", "?"),
            ("ls [ab]", "["),
            ("ls ~/x", "~"),
            ("true # comment", "#"),
            ("(cd x)", "("),
            ("a\nb", "a line break"),
            ("LANG=C sort x", "LANG="),
            ("cd /tmp", "`cd`"),
            ("for i in 1 2", "`for`"),
            ("! false", "`!`"),
            ("source env.sh", "`source`"),
        ] {
            assert_eq!(shell_syntax(text).as_deref(), Some(syntax), "{text}");
        }
        for plain in [
            "./bench --n 1000",
            "echo 'a > b' \"c | d\" e\\>f",
            "awk '{print $1}' file",
            "python3 -c 'print(1)'",
            "python3 -c \"print(1)\"",
            "./prog --opt=value key=value a~b x#y",
            "git log -1",
            "echo 'a",
            "cdrom eject",
        ] {
            assert_eq!(shell_syntax(plain), None, "{plain}");
        }
    }

    #[test]
    fn shell_syntax_sends_every_command_through_the_shell_or_is_refused_with_n() {
        let (specs, reason) = parse(&["/bin/true", "echo hi > out.txt"], &[], &Shell::Auto).unwrap();
        assert_eq!(specs[0].argv, ["/bin/sh", "-c", "/bin/true"], "both bear the shell's cost");
        assert_eq!(specs[1].argv, ["/bin/sh", "-c", "echo hi > out.txt"]);
        let reason = reason.unwrap();
        assert_eq!((reason.command.as_str(), reason.syntax.as_str()), ("echo hi > out.txt", ">"));
        assert!(
            reason.note().contains("has shell syntax (>): running every command with /bin/sh -c"),
            "{}",
            reason.note()
        );
        let err = parse(&["/bin/true", "echo hi > out.txt"], &[], &Shell::Never).unwrap_err();
        assert!(matches!(err, CommandError::ShellSyntaxRefused { .. }), "{err:?}");
        assert!(err.to_string().contains("`echo hi > out.txt` has shell syntax (>), and -N"), "{err}");
        // An explicit shell runs everything through it, and needs no note.
        let (_, reason) = parse(&["a > b"], &[], &Shell::Always(vec!["zsh".into()])).unwrap();
        assert_eq!(reason, None);
    }

    #[test]
    fn identical_commands_are_numbered_and_named_duplicates_rejected() {
        let (specs, _) = parse(&["./a", "./a", "./b"], &[], &Shell::Auto).unwrap();
        let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["./a #1", "./a #2", "./b"]);
        assert!(specs.iter().take(2).all(|s| s.argv == ["./a"]));
        let err = parse(&["x", "y"], &["same", "same"], &Shell::Auto).unwrap_err();
        assert!(err.to_string().contains("two commands are named `same`"));
        // A name given for the first copy only: the second keeps the text, which is distinct.
        let (specs, _) = parse(&["./a", "./a"], &["base"], &Shell::Auto).unwrap();
        assert_eq!((specs[0].name.as_str(), specs[1].name.as_str()), ("base", "./a #2"));
    }

    #[test]
    fn rejects_unbalanced_quotes_and_empty() {
        assert!(parse(&["echo 'a"], &[], &Shell::Auto).is_err());
        assert!(parse(&["  "], &[], &Shell::Auto).is_err());
    }

    #[test]
    fn resolves_programs_and_rejects_missing_ones() {
        assert!(resolve_program("sh").is_ok());
        let err = resolve_program("definitely-not-a-program-xyz").unwrap_err();
        assert!(err.to_string().contains("not found"));
        assert!(resolve_program("/nonexistent/prog").unwrap_err().to_string().contains("does not exist"));
        let plain = std::env::temp_dir().join(format!("perflab-not-exec-{}", std::process::id()));
        std::fs::write(&plain, "data").unwrap();
        std::fs::set_permissions(&plain, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(resolve_program(plain.to_str().unwrap()).unwrap_err().to_string().contains("not executable"));
        std::fs::remove_file(&plain).ok();
        assert!(resolve_program("/tmp").unwrap_err().to_string().contains("directory"));
    }
}
