//! The environment every run starts with, built once per experiment.

use std::ffi::{CString, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::ptr;

/// Name of the padding variable added to every command's environment (see
/// `experiment::schedule`: it varies the stack's start between rounds).
pub const PAD_VARIABLE: &str = "PERFLAB_PAD";

/// The environment every run gets: perflab's own, plus the round's padding variable.
/// Built once per experiment; a round only swaps the padding.
pub struct Environment {
    pub(super) padding_name: &'static str,
    /// Owns the strings `pointers` points into; the padding, when set, is last.
    pub(super) vars: Vec<CString>,
    pub(super) padded: bool,
    pub(super) pointers: Vec<*mut libc::c_char>,
}

impl Environment {
    /// The current environment, without any inherited padding variable (which
    /// [`Environment::pad`] sets per round).
    pub fn inherited() -> Environment {
        let padding_name = PAD_VARIABLE;
        let vars = std::env::vars_os()
            .filter(|(k, _)| OsStr::new(padding_name) != k)
            .filter_map(|(k, v)| {
                let mut kv = k.as_bytes().to_vec();
                kv.push(b'=');
                kv.extend_from_slice(v.as_bytes());
                CString::new(kv).ok()
            })
            .collect();
        let mut env = Environment { padding_name, vars, padded: false, pointers: Vec::new() };
        env.pad(None);
        env
    }

    /// Set a variable for the runs (replacing any inherited value).
    pub fn set(&mut self, name: &str, value: &OsStr) {
        let prefix = format!("{name}=");
        let padding = if self.padded { self.vars.pop() } else { None };
        self.vars.retain(|kv| !kv.as_bytes().starts_with(prefix.as_bytes()));
        let mut kv = prefix.into_bytes();
        kv.extend_from_slice(value.as_bytes());
        if let Ok(kv) = CString::new(kv) {
            self.vars.push(kv);
        }
        self.vars.extend(padding);
        self.pointers = null_terminated(&self.vars);
    }

    /// Add the padding variable with `bytes` bytes of value, or remove it (`None`).
    pub fn pad(&mut self, bytes: Option<usize>) {
        if self.padded {
            self.vars.pop();
        }
        self.padded = bytes.is_some();
        if let Some(bytes) = bytes {
            let mut kv = Vec::with_capacity(self.padding_name.len() + 1 + bytes);
            kv.extend_from_slice(self.padding_name.as_bytes());
            kv.push(b'=');
            kv.resize(kv.len() + bytes, b'x');
            self.vars.push(CString::new(kv).expect("padding has no NUL"));
        }
        self.pointers = null_terminated(&self.vars);
    }
}

/// The NULL-terminated pointer array exec expects; valid while `items` lives.
pub(super) fn null_terminated(items: &[CString]) -> Vec<*mut libc::c_char> {
    items.iter().map(|s| s.as_ptr() as *mut libc::c_char).chain(std::iter::once(ptr::null_mut())).collect()
}
