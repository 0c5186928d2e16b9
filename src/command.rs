//! Turning what the user typed into something to execute: split like a shell splits
//! words (or hand it to a shell with `--shell`), resolve the program on PATH, and
//! fail before anything runs when it does not exist or is not executable.

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
        specs.push(CommandSpec { name, argv, command_line: text.clone() });
    }
    let mut seen = std::collections::HashSet::new();
    for spec in &specs {
        if !seen.insert(spec.name.as_str()) {
            return Err(usage!("two commands are named `{}`; give each a distinct --name", spec.name));
        }
    }
    Ok(specs)
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

#[cfg(test)]
mod tests {
    use super::*;

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
