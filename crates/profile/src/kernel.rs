//! Kernel symbols: the running kernel's functions from /proc/kallsyms (the kernel image
//! and loaded modules), the few a recording needs kept in the profile (kernel addresses
//! change with every boot), and kernel addresses named from them — `[k]` rows like
//! perf's. Also where a readable kernel image for `annotate` would be.
//!
//! Written by hand: kallsyms is a three-column text file, and blazesym's kernel
//! resolver wants the whole symbolizer stack around it.

use super::error::KallsymsError;
use super::format::{KernelSymbol, Profile, Space};
use std::path::PathBuf;

/// The object name of kernel-image functions; module functions are `[kernel:MODULE]`.
pub const KERNEL_OBJECT: &str = "[kernel]";

pub(crate) fn object_name(module: Option<&str>) -> String {
    match module {
        Some(m) => format!("[kernel:{m}]"),
        None => KERNEL_OBJECT.to_string(),
    }
}

/// True for the object name perflab gives kernel code (`[kernel]` or `[kernel:MODULE]`).
pub fn is_kernel_object(object: &str) -> bool {
    object == KERNEL_OBJECT || (object.starts_with("[kernel:") && object.ends_with(']'))
}

/// Every text symbol of the running kernel, sorted by address.
pub struct Kallsyms {
    symbols: Vec<KernelSymbol>,
}

impl Kallsyms {
    /// Read /proc/kallsyms; the error says why kernel addresses cannot be named.
    pub fn read() -> Result<Kallsyms, KallsymsError> {
        let text = std::fs::read_to_string("/proc/kallsyms").map_err(KallsymsError::Read)?;
        Kallsyms::parse(&text)
    }

    /// `ADDRESS TYPE NAME [\t[MODULE]]` per line. Every address is zero when the reader
    /// may not see them (kptr_restrict, or not root with kptr_restrict=1).
    pub fn parse(text: &str) -> Result<Kallsyms, KallsymsError> {
        let mut starts: Vec<(u64, &str, Option<&str>)> = Vec::new();
        let mut lines = 0;
        for line in text.lines() {
            let mut fields = line.split_whitespace();
            let (Some(address), Some(kind), Some(name)) = (fields.next(), fields.next(), fields.next()) else {
                continue;
            };
            lines += 1;
            // Text (t/T) and weak (w/W, usually text) symbols; data symbols never hold samples.
            if !matches!(kind, "t" | "T" | "w" | "W") {
                continue;
            }
            let Ok(address) = u64::from_str_radix(address, 16) else { continue };
            if address == 0 {
                continue;
            }
            let module = fields.next().and_then(|m| m.strip_prefix('[')?.strip_suffix(']'));
            starts.push((address, name, module));
        }
        if starts.is_empty() {
            return Err(if lines > 0 {
                let restrict = std::fs::read_to_string("/proc/sys/kernel/kptr_restrict").unwrap_or_default();
                KallsymsError::ZeroAddresses { kptr_restrict: restrict.trim().to_string() }
            } else {
                KallsymsError::NoFunctions
            });
        }
        starts.sort_by_key(|(address, _, _)| *address);
        // A function ends where the next begins; the last one gets a page.
        let symbols = starts
            .iter()
            .enumerate()
            .map(|(i, &(start, name, module))| KernelSymbol {
                start,
                end: starts.get(i + 1).map_or(start + 4096, |next| next.0.max(start + 1)),
                name: name.to_string(),
                module: module.map(str::to_string),
            })
            .collect();
        Ok(Kallsyms { symbols })
    }

    /// The address of the symbol named `name` (`_text`: where the kernel is loaded).
    pub(crate) fn address_of(&self, name: &str) -> Option<u64> {
        self.symbols.iter().find(|s| s.name == name).map(|s| s.start)
    }

    /// The symbol covering `address`.
    pub fn lookup(&self, address: u64) -> Option<&KernelSymbol> {
        lookup(&self.symbols, address)
    }

    /// Store in `profile` the kernel symbols its kernel samples and frames fall in.
    pub fn keep_used(&self, profile: &mut Profile) {
        let addresses = profile
            .samples
            .iter()
            .filter(|s| s.space == Space::Kernel)
            .map(|s| s.offset)
            .chain(profile.frames.iter().filter(|f| f.space == Space::Kernel).map(|f| f.offset));
        let mut used: Vec<KernelSymbol> = addresses.filter_map(|a| self.lookup(a)).cloned().collect();
        used.sort_by_key(|s| s.start);
        used.dedup_by_key(|s| s.start);
        profile.kernel_symbols = used;
    }
}

/// Name the profile's kernel addresses: keep the symbols they fall in, or a note saying
/// why they stay `[kernel]`. Profiles without kernel samples get neither.
pub(crate) fn attach_symbols(profile: &mut Profile) {
    let has_kernel = profile.samples.iter().any(|s| s.space == Space::Kernel)
        || profile.frames.iter().any(|f| f.space == Space::Kernel);
    if !has_kernel {
        return;
    }
    match Kallsyms::read() {
        Ok(kallsyms) => kallsyms.keep_used(profile),
        Err(why) => profile.kernel_symbols_note = Some(why.to_string()),
    }
}

/// The symbol covering `address` in a table sorted by start.
pub fn lookup(symbols: &[KernelSymbol], address: u64) -> Option<&KernelSymbol> {
    let i = symbols.partition_point(|s| s.start <= address).checked_sub(1)?;
    Some(&symbols[i]).filter(|s| address < s.end)
}

/// The one warning a report gives when kernel samples have no names.
pub fn missing_symbols_warning(profile: &Profile) -> Option<String> {
    if !profile.kernel_symbols.is_empty() {
        return None;
    }
    let kernel_samples: u64 = profile.samples.iter().filter(|s| s.space == Space::Kernel).map(|s| s.count).sum();
    if kernel_samples == 0 {
        return None;
    }
    Some(match &profile.kernel_symbols_note {
        Some(why) => format!("kernel functions are not named, {kernel_samples} samples stay [kernel]: {why}"),
        None => format!(
            "this profile has no kernel symbols (recorded by an older perflab): {kernel_samples} samples stay [kernel]"
        ),
    })
}

/// An uncompressed kernel image with symbols (vmlinux) for the running kernel, where
/// perf and distributions put one; None when there is none (most machines: only
/// debug-symbol packages such as linux-image-*-dbg install it).
pub fn find_vmlinux() -> Option<PathBuf> {
    let release = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok()?;
    vmlinux_candidates(release.trim()).into_iter().find(|p| p.is_file())
}

/// perf's search list (tools/perf/util/symbol.c, vmlinux_path__init).
pub(crate) fn vmlinux_candidates(release: &str) -> Vec<PathBuf> {
    [
        format!("/boot/vmlinux-{release}"),
        format!("/usr/lib/debug/boot/vmlinux-{release}"),
        format!("/lib/modules/{release}/build/vmlinux"),
        format!("/usr/lib/debug/lib/modules/{release}/vmlinux"),
        format!("/usr/lib/debug/boot/vmlinux-{release}.debug"),
        "/boot/vmlinux".to_string(),
    ]
    .into_iter()
    .map(PathBuf::from)
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{FrameRef, SampleCount};

    const KALLSYMS: &str = "\
ffffffff81000000 T _stext
ffffffff81000100 t do_syscall_64
ffffffff81000180 D some_data
ffffffff81000200 T finish_task_switch.isra.0
ffffffff81000300 W weak_fn
ffffffffc0001000 t ext4_read\t[ext4]
";

    #[test]
    fn text_symbols_cover_up_to_the_next_symbol_and_modules_are_named() {
        let k = Kallsyms::parse(KALLSYMS).unwrap();
        assert_eq!(k.lookup(0xffffffff81000150).unwrap().name, "do_syscall_64");
        // Data symbols are not boundaries of their own: do_syscall_64 runs to the next function.
        assert_eq!(k.lookup(0xffffffff810001f0).unwrap().name, "do_syscall_64");
        assert_eq!(k.lookup(0xffffffff81000300).unwrap().name, "weak_fn");
        let ext4 = k.lookup(0xffffffffc0001010).unwrap();
        assert_eq!((ext4.name.as_str(), ext4.module.as_deref()), ("ext4_read", Some("ext4")));
        assert!(k.lookup(0xffffffff80000000).is_none());
        assert!(k.lookup(0xffffffffc0001000 + 4096).is_none());
        assert_eq!(object_name(Some("ext4")), "[kernel:ext4]");
        assert!(is_kernel_object("[kernel:ext4]") && is_kernel_object("[kernel]") && !is_kernel_object("[vdso]"));
    }

    #[test]
    fn zero_addresses_mean_no_names_with_a_reason() {
        let err =
            Kallsyms::parse("0000000000000000 T _stext\n0000000000000000 t do_syscall_64\n").err().unwrap().to_string();
        assert!(err.contains("zero addresses") && err.contains("kptr_restrict"), "{err}");
        assert!(Kallsyms::parse("").err().unwrap().to_string().contains("no kernel functions"));
    }

    #[test]
    fn a_profile_keeps_only_the_symbols_it_uses_and_warns_once_without_them() {
        let sample = |space, offset| SampleCount { pid: 1, tid: 1, space, object: None, offset, count: 2, period: 2 };
        let mut p = Profile {
            samples: vec![sample(Space::Kernel, 0xffffffff81000210), sample(Space::Unmapped, 0x10)],
            frames: vec![
                FrameRef { space: Space::Kernel, object: None, offset: 0xffffffff81000101 },
                FrameRef { space: Space::Kernel, object: None, offset: 0xffffffff81000220 },
            ],
            ..Profile::default()
        };
        assert!(missing_symbols_warning(&p).unwrap().contains("older perflab"));
        p.kernel_symbols_note = Some("why".into());
        assert!(missing_symbols_warning(&p).unwrap().ends_with(": why"));
        Kallsyms::parse(KALLSYMS).unwrap().keep_used(&mut p);
        let names: Vec<&str> = p.kernel_symbols.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["do_syscall_64", "finish_task_switch.isra.0"]);
        assert_eq!(lookup(&p.kernel_symbols, 0xffffffff81000250).unwrap().name, "finish_task_switch.isra.0");
        assert!(lookup(&p.kernel_symbols, 0xffffffff81000050).is_none());
        assert!(missing_symbols_warning(&p).is_none());
    }

    #[test]
    fn vmlinux_is_looked_for_where_perf_looks() {
        let paths = vmlinux_candidates("6.1.0-9-amd64");
        assert!(paths.contains(&PathBuf::from("/usr/lib/debug/boot/vmlinux-6.1.0-9-amd64")));
    }
}
