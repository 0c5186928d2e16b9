//! Database secrets never shown: [`mask`] is the one function every message, log line,
//! JSON document and report passes a database URL — or any text that may quote one, an
//! error chain — through. It hides a password in every form libpq accepts:
//!
//! - a URL's userinfo, `postgres://user:secret@host/db`, also when the password holds an
//!   unencoded `@` (everything up to the last `@` of the authority is userinfo);
//! - `password=` and `sslpassword=` parameters of a URL's query, also with a
//!   percent-encoded key (`pass%77ord=`), and of a `key=value` connection string
//!   (`host=h password='a b'`);
//! - the values of the environment variables libpq reads a password from (PGPASSWORD,
//!   PGSSLPASSWORD), and every password of a URL perflab opened ([`remember`]),
//!   wherever they appear verbatim (a server's error quoting it, a URL perflab
//!   re-formatted) — those of 8 characters or more (see `MIN_VERBATIM`).

use regex::Regex;
use std::sync::{Mutex, OnceLock};

/// What a hidden secret is shown as.
const HIDDEN: &str = "***";

/// libpq's parameters that hold a secret.
const SECRET_KEYS: [&str; 2] = ["password", "sslpassword"];
/// The environment variables libpq reads secrets from.
const SECRET_ENV: [&str; 2] = ["PGPASSWORD", "PGSSLPASSWORD"];
/// Secrets shorter than this are not searched for verbatim: a short password is often
/// a word messages use (the test server's is `perflab`, which would hide the program's
/// own name on every line). They are still hidden where they stand in a URL or a
/// `password=` parameter.
const MIN_VERBATIM: usize = 8;

/// The passwords of the URLs perflab opened, to hide wherever they appear.
static REMEMBERED: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// `text` with every database secret hidden (see the module).
pub fn mask(text: &str) -> String {
    static USERINFO: OnceLock<Regex> = OnceLock::new();
    static QUERY: OnceLock<Regex> = OnceLock::new();
    static KEYWORD: OnceLock<Regex> = OnceLock::new();
    // scheme://user:password@host — the password runs to the last `@` before the
    // authority ends (whitespace ends the URL in running text).
    let userinfo = USERINFO.get_or_init(|| Regex::new(r"(?i)(postgres(?:ql)?://[^:/?#@\s]*:)([^\s]*)@").unwrap());
    // ?key=value or &key=value of a URL's query.
    let query = QUERY.get_or_init(|| Regex::new(r"([?&])([^=&#\s]+)=([^&#\s]*)").unwrap());
    // key = value of a connection string: a value is 'quoted (with \' escapes)' or a word.
    let keyword = KEYWORD
        .get_or_init(|| Regex::new(r"(?i)\b(password|sslpassword)(\s*=\s*)('(?:[^'\\]|\\.)*'?|[^\s&]*)").unwrap());
    let text = userinfo.replace_all(text, |c: &regex::Captures| {
        // The password runs to the last `@` matched, unless a `/` follows an `@`: that
        // `/` begins the path (`…@host/db@x`), and the password ends at the last `@`
        // before it. Without an `@` it all is hidden (more than a password, at worst).
        let secret = &c[2];
        let cut = match secret.find('@') {
            Some(first_at) => match secret[first_at..].find('/') {
                Some(slash) => secret[..first_at + slash].rfind('@').unwrap_or(secret.len()),
                None => secret.len(),
            },
            None => secret.len(),
        };
        format!("{}{HIDDEN}{}@", &c[1], &secret[cut..])
    });
    let text = query.replace_all(&text, |c: &regex::Captures| {
        if SECRET_KEYS.contains(&percent_decode(&c[2]).to_ascii_lowercase().as_str()) {
            format!("{}{}={HIDDEN}", &c[1], &c[2])
        } else {
            c[0].to_string()
        }
    });
    let mut text = keyword.replace_all(&text, format!("$1$2{HIDDEN}")).into_owned();
    for secret in known_secrets() {
        for form in [secret.clone(), percent_encode(&secret)] {
            if form.len() >= MIN_VERBATIM && text.contains(&form) {
                text = text.replace(&form, HIDDEN);
            }
        }
    }
    text
}

/// Keep the secrets of `url` (a database URL perflab is about to open), so that they are
/// hidden wherever they appear later.
pub fn remember(url: &str) {
    let mut found = Vec::new();
    if let Some((_, rest)) = url.split_once("://") {
        let authority_end = rest.find(['?', '#']).unwrap_or(rest.len());
        let authority = &rest[..authority_end];
        let userinfo_end = authority.find('/').map_or(authority, |slash| &authority[..slash]);
        let userinfo_end = userinfo_end.rfind('@').or_else(|| authority.rfind('@'));
        if let Some(at) = userinfo_end {
            if let Some((_, password)) = authority[..at].split_once(':') {
                found.push(percent_decode(password));
                found.push(password.to_string());
            }
        }
        for pair in rest[authority_end..].trim_start_matches(['?', '#']).split('&') {
            if let Some((key, value)) = pair.split_once('=') {
                if SECRET_KEYS.contains(&percent_decode(key).to_ascii_lowercase().as_str()) {
                    found.push(percent_decode(value));
                    found.push(value.to_string());
                }
            }
        }
    }
    found.retain(|s| !s.is_empty());
    let mut remembered = REMEMBERED.lock().unwrap_or_else(|p| p.into_inner());
    for secret in found {
        if !remembered.contains(&secret) {
            remembered.push(secret);
        }
    }
}

/// The remembered passwords and the environment's.
fn known_secrets() -> Vec<String> {
    let mut secrets = REMEMBERED.lock().unwrap_or_else(|p| p.into_inner()).clone();
    secrets.extend(SECRET_ENV.iter().filter_map(|name| std::env::var(name).ok()).filter(|s| !s.is_empty()));
    // Longest first: a secret that contains another is replaced whole.
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    secrets
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_hidden_in_every_form() {
        let cases = [
            ("postgres://u:secret@h/db", "postgres://u:***@h/db"),
            ("postgresql://u:p@ss@h:5432/db", "postgresql://u:***@h:5432/db"),
            ("postgres://u@h/db", "postgres://u@h/db"),
            ("postgres://h/db?password=hunter22&sslmode=disable", "postgres://h/db?password=***&sslmode=disable"),
            ("postgres://h/db?sslmode=disable&PASSWORD=x1", "postgres://h/db?sslmode=disable&PASSWORD=***"),
            ("postgres://h/db?pass%77ord=enc0ded", "postgres://h/db?pass%77ord=***"),
            ("postgres://h/db?sslpassword=keypass", "postgres://h/db?sslpassword=***"),
            ("host=h user=u password=s3cret dbname=d", "host=h user=u password=*** dbname=d"),
            ("host=h password = 'a b\\' c' dbname=d", "host=h password = *** dbname=d"),
            ("cannot connect to postgres://u:pw@h/db: refused", "cannot connect to postgres://u:***@h/db: refused"),
            (".perflab/perflab.db", ".perflab/perflab.db"),
            ("postgres://u:x@h/db@weird", "postgres://u:***@h/db@weird"),
        ];
        for (url, shown) in cases {
            assert_eq!(mask(url), shown, "{url}");
        }
    }

    #[test]
    fn remembered_passwords_are_hidden_wherever_they_appear() {
        remember("postgres://u:Tr0ub4dor%263@h/db?password=other-secret");
        let text = "server said: password Tr0ub4dor&3 rejected, Tr0ub4dor%263, other-secret";
        assert_eq!(mask(text), "server said: password *** rejected, ***, ***");
    }
}
