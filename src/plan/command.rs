//! Turning what the user typed into something to execute: command templates with
//! `{parameter}` placeholders expanded, split like a shell splits words (or handed to a
//! shell with `--shell`), the program resolved on PATH, and a failure before anything
//! runs when it does not exist or is not executable.

use crate::error::Failure;
use crate::model::CommandSpec;
use crate::usage;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

/// Build the command specs; names default to the command text, and a command given
/// several times without a name (an A/A check) is named `TEXT #1`, `TEXT #2`, ...
/// Two commands named alike on purpose are an error.
pub fn parse_commands(texts: &[String], names: &[String], shell: Option<&str>) -> Result<Vec<CommandSpec>, Failure> {
    if names.len() > texts.len() {
        return Err(usage!("{} --name given for {} commands", names.len(), texts.len()));
    }
    let mut specs = Vec::with_capacity(texts.len());
    for (i, text) in texts.iter().enumerate() {
        let argv = match shell {
            Some(sh) => vec![sh.to_string(), "-c".to_string(), text.clone()],
            None => shell_words::split(text).map_err(|e| usage!("cannot split command `{text}`: {e}"))?,
        };
        if argv.is_empty() {
            return Err(usage!("command {} is empty", i + 1));
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
            return Err(usage!("two commands are named `{}`; give each a distinct --name", spec.name));
        }
    }
    Ok(specs)
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
pub fn resolve_program(program: &str) -> Result<PathBuf, Failure> {
    let path = if program.contains('/') {
        let p = PathBuf::from(program);
        if !p.exists() {
            return Err(usage!("program `{program}` does not exist"));
        }
        p
    } else {
        which::which(program).map_err(|_| usage!("program `{program}` not found on PATH"))?
    };
    let meta = std::fs::metadata(&path).map_err(|e| usage!("cannot inspect `{}`: {e}", path.display()))?;
    if meta.is_dir() {
        return Err(usage!("`{}` is a directory, not a program", path.display()));
    }
    if meta.permissions().mode() & 0o111 == 0 {
        return Err(usage!("`{}` is not executable", path.display()));
    }
    Ok(path)
}

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

/// Every combination of parameter values, first parameter varying slowest.
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
pub fn scan_values(low: &str, high: &str, step: Option<&str>) -> Result<Vec<String>, String> {
    let parse = |text: &str, what: &str| -> Result<f64, String> {
        text.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite())
            .ok_or_else(|| format!("{what} `{text}` is not a number"))
    };
    let (lo, hi) = (parse(low, "--parameter-scan's start")?, parse(high, "--parameter-scan's end")?);
    let step_text = step.unwrap_or("1");
    let delta = parse(step_text, "--parameter-step-size")?;
    if delta <= 0.0 {
        return Err(format!("--parameter-step-size `{step_text}` must be positive"));
    }
    if hi < lo {
        return Err(format!("--parameter-scan goes from {low} down to {high}: give the smaller value first"));
    }
    let count = ((hi - lo) / delta + 1e-9).floor() as usize + 1;
    if count > MAX_SCAN_VALUES {
        return Err(format!(
            "--parameter-scan from {low} to {high} by {step_text} gives {count} values (at most {MAX_SCAN_VALUES})"
        ));
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
) -> Result<Vec<(usize, Combination)>, Failure> {
    for (name, values) in parameters {
        if !is_placeholder_name(name) {
            return Err(usage!("parameter name `{name}`: expected letters, digits, `_` or `-`"));
        }
        if values.is_empty() || values.iter().any(String::is_empty) {
            return Err(usage!("parameter `{name}` needs non-empty values"));
        }
    }
    if !parameters.is_empty() {
        for template in templates {
            if let Some(unknown) =
                expand(template, &|_| None).1.iter().find(|p| !parameters.iter().any(|(n, _)| n == *p))
            {
                return Err(usage!(
                    "`{{{unknown}}}` in `{template}` is not a parameter (-L/-P); write `{{{{{unknown}}}}}` for literal braces"
                ));
            }
        }
    }
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
pub fn run_shell(script: &str, dir: Option<&std::path::Path>, show_output: bool) -> Result<(), String> {
    use std::process::{Command, Stdio};
    let mut command = Command::new("/bin/sh");
    command.args(["-c", script]).stdin(Stdio::null());
    if let Some(dir) = dir {
        command.current_dir(dir);
    }
    if !show_output {
        command.stdout(Stdio::null()).stderr(Stdio::piped());
    }
    let out = command.output().map_err(|e| format!("cannot run /bin/sh: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    match stderr.lines().rev().find(|l| !l.trim().is_empty()) {
        Some(last) => Err(format!("`{script}` {}: {}", out.status, last.trim())),
        None => Err(format!("`{script}` {}", out.status)),
    }
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
        assert!(scan_values("5", "1", None).unwrap_err().contains("smaller value first"));
        assert!(scan_values("1", "x", None).unwrap_err().contains("not a number"));
        assert!(scan_values("1", "2", Some("0")).unwrap_err().contains("must be positive"));
        assert!(scan_values("0", "1e9", None).unwrap_err().contains("at most"));
    }

    #[test]
    fn helper_scripts_report_their_last_error_line() {
        assert_eq!(run_shell("true", None, false), Ok(()));
        let err = run_shell("echo first >&2; echo 'the reason' >&2; exit 4", None, false).unwrap_err();
        assert!(err.contains("exit status: 4") && err.ends_with("the reason"), "{err}");
        let dir = std::env::temp_dir().join(format!("perflab-shell-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("marker"), "").unwrap();
        assert!(run_shell("test -f marker", Some(&dir), false).is_ok(), "runs in the given directory");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn splits_like_a_shell() {
        let specs = parse_commands(&["echo 'a b' c".into()], &[], None).unwrap();
        assert_eq!(specs[0].argv, ["echo", "a b", "c"]);
        assert_eq!(specs[0].name, "echo 'a b' c");
    }

    #[test]
    fn shell_mode_passes_text_to_the_shell() {
        let specs = parse_commands(&["echo $HOME".into()], &["x".into()], Some("/bin/sh")).unwrap();
        assert_eq!(specs[0].argv, ["/bin/sh", "-c", "echo $HOME"]);
        assert_eq!(specs[0].name, "x");
    }

    #[test]
    fn identical_commands_are_numbered_and_named_duplicates_rejected() {
        let specs = parse_commands(&["./a".into(), "./a".into(), "./b".into()], &[], None).unwrap();
        let names: Vec<&str> = specs.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["./a #1", "./a #2", "./b"]);
        assert!(specs.iter().take(2).all(|s| s.argv == ["./a"]));
        let err = parse_commands(&["x".into(), "y".into()], &["same".into(), "same".into()], None).unwrap_err();
        assert!(err.to_string().contains("two commands are named `same`"));
        // A name given for the first copy only: the second keeps the text, which is distinct.
        let specs = parse_commands(&["./a".into(), "./a".into()], &["base".into()], None).unwrap();
        assert_eq!((specs[0].name.as_str(), specs[1].name.as_str()), ("base", "./a #2"));
    }

    #[test]
    fn rejects_unbalanced_quotes_and_empty() {
        assert!(parse_commands(&["echo 'a".into()], &[], None).is_err());
        assert!(parse_commands(&["  ".into()], &[], None).is_err());
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
