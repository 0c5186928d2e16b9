//! Why an event that happens only in kernel mode (context switches, CPU migrations)
//! counted nothing, in words that are true for whoever runs perflab: a `:u` modifier
//! or `--counter-scope user` left kernel mode out by choice, or perf_event_paranoid
//! forbade kernel mode to an unprivileged user.

use super::event::Event;

/// The reason shown for `event`, which happens only in kernel mode and was counted in
/// user mode only. `user_scope`: `--counter-scope user` was asked; `privileged`: kernel
/// mode could have been counted here (root, CAP_PERFMON, or perf_event_paranoid ≤ 1).
pub fn unseen_reason(event: &Event, user_scope: bool, privileged: bool, paranoid: Option<i32>) -> String {
    let base = &event.base;
    let level = paranoid.map_or_else(|| "?".into(), |l| l.to_string());
    let chosen_by_modifier = event.modifiers.user || event.modifiers.kernel || event.modifiers.hypervisor;
    if chosen_by_modifier {
        let unprivileged = if privileged {
            String::new()
        } else {
            format!(
                " (perf_event_paranoid={level} also forbids kernel mode to this user: run as root or `sysctl kernel.perf_event_paranoid=1`)"
            )
        };
        return format!(
            "{base} happen in kernel mode, which the `:u` modifier excludes: count `{base}` without `:u`{unprivileged}"
        );
    }
    if privileged && user_scope {
        return format!(
            "{base} happen in kernel mode, which --counter-scope user excludes: use --counter-scope all (or auto)"
        );
    }
    format!(
        "{base} happen in kernel mode, which user-only counting cannot see (perf_event_paranoid={level}); \
         run as root or use `sysctl kernel.perf_event_paranoid=1`"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(spec: &str) -> Event {
        crate::perf::event::parse_one(spec).unwrap()
    }

    #[test]
    fn a_u_modifier_as_root_says_to_drop_it_not_to_become_root() {
        let reason = unseen_reason(&event("context-switches:u"), false, true, Some(2));
        assert_eq!(
            reason,
            "context-switches happen in kernel mode, which the `:u` modifier excludes: count `context-switches` without `:u`"
        );
        assert!(!reason.contains("run as root") && !reason.contains("sysctl"), "{reason}");
    }

    #[test]
    fn a_u_modifier_without_privileges_names_both_causes() {
        let reason = unseen_reason(&event("cs:u"), true, false, Some(3));
        assert!(reason.contains("`:u` modifier excludes"), "{reason}");
        assert!(reason.contains("perf_event_paranoid=3 also forbids") && reason.contains("run as root"), "{reason}");
    }

    #[test]
    fn a_user_scope_chosen_as_root_says_which_option_to_change() {
        let reason = unseen_reason(&event("cpu-migrations"), true, true, Some(2));
        assert!(reason.contains("--counter-scope user excludes") && !reason.contains("run as root"), "{reason}");
    }

    #[test]
    fn an_unprivileged_user_scope_says_how_to_allow_kernel_mode() {
        let reason = unseen_reason(&event("context-switches"), true, false, Some(2));
        assert!(reason.contains("perf_event_paranoid=2") && reason.contains("run as root"), "{reason}");
    }
}
