//! Building each version N times with different code layouts (`--layouts N`, `layouts
//! = N` in `[builds]`): `{layout}` in a build's `prepare` command and `path` stands for a
//! layout seed, distinct per version and layout; every layout is built before anything
//! is measured, and the builds must really differ (docs/suites.md, "Code layouts").
//!
//! What the seed does is the build's business: recipes for lld and mold
//! (`--shuffle-sections`), function and loop alignment and link order are in
//! docs/suites.md. What no recipe randomizes (the stack, the heap, the order of the
//! program's data at run time) stays fixed, as it does for a single build.

use crate::error::SuiteError;
use crate::Build;
use perflab_model::{LayoutVersion, Layouts};
use perflab_sys::command::expand;
use std::path::Path;

/// The placeholder a layout seed replaces in a build's `path`, `command` and `prepare`.
pub const PLACEHOLDER: &str = "layout";

/// The largest seed: lld reads `--shuffle-sections=GLOB=SEED` as a 32-bit integer, and 0
/// asks it for a random seed (not reproducible), so seeds lie in 1 ..= 2³¹ − 1.
const MAX_SEED: u64 = (1 << 31) - 1;

/// One layout of one version: the build with `{layout}` replaced by its seed.
#[derive(Debug, Clone, PartialEq)]
pub struct LayoutBuild {
    /// The version's build name (`v3`).
    pub version: String,
    /// The seed `{layout}` is replaced with.
    pub seed: u64,
    /// Named `v3@L2`; its `value` and `prepare` have the seed in place of `{layout}`.
    pub build: Build,
}

/// True when the build's text or prepare command names `{layout}`.
pub fn uses_layout(build: &Build) -> bool {
    [Some(&build.value), build.prepare.as_ref()]
        .into_iter()
        .flatten()
        .any(|text| expand(text, &|_| None).1.iter().any(|p| p == PLACEHOLDER))
}

/// `text` with `{layout}` replaced by `seed` (other placeholders kept for later).
pub fn substitute(text: &str, seed: u64) -> String {
    expand(text, &|name| (name == PLACEHOLDER).then(|| seed.to_string())).0
}

/// The seed of layout `index` of `version` in a run seeded `base`: a SplitMix64 step of
/// both, so runs with the same `--seed` build the same layouts and versions never share
/// one (layouts are nested in versions: no pairing of layouts across versions is assumed).
pub fn seed(base: u64, version: &str, index: u32) -> u64 {
    // FNV-1a of the name: stable across Rust versions, unlike DefaultHasher.
    let name = version.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100_0000_01b3));
    let mut z = base ^ name.rotate_left(17) ^ (index as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    1 + z % MAX_SEED
}

/// `count` layouts of `build` with seeds drawn from `base`. The build must name
/// `{layout}` (in its path or its prepare command), or every layout would be the same.
pub fn expand_build(build: &Build, count: u32, base: u64) -> Result<Vec<LayoutBuild>, SuiteError> {
    if !uses_layout(build) {
        return Err(SuiteError::NoLayoutPlaceholder(build.name.clone()));
    }
    let mut out: Vec<LayoutBuild> = Vec::with_capacity(count as usize);
    for index in 0..count {
        let mut s = seed(base, &build.name, index);
        // Distinct seeds within a version, whatever the hash does.
        while out.iter().any(|l| l.seed == s) {
            s = 1 + (s % MAX_SEED);
        }
        out.push(LayoutBuild {
            version: build.name.clone(),
            seed: s,
            build: Build {
                name: format!("{}@L{}", build.name, index + 1),
                value: substitute(&build.value, s),
                prepare: build.prepare.as_deref().map(|p| substitute(p, s)),
            },
        });
    }
    Ok(out)
}

/// `count` layouts of each of `builds` (the baseline's first), seeded from `base`.
pub fn expand_versions<'b>(
    builds: impl IntoIterator<Item = &'b Build>,
    count: u32,
    base: u64,
) -> Result<Vec<LayoutBuild>, SuiteError> {
    if count < 2 {
        return Err(SuiteError::TooFewLayouts(count));
    }
    let mut out = Vec::new();
    for build in builds {
        out.extend(expand_build(build, count, base)?);
    }
    Ok(out)
}

/// Which commands are which version's layouts, for layout builds in command order.
pub fn layouts_of(builds: &[LayoutBuild]) -> Layouts {
    let mut versions: Vec<LayoutVersion> = Vec::new();
    for (index, b) in builds.iter().enumerate() {
        match versions.iter_mut().find(|v| v.name == b.version) {
            Some(v) => {
                v.commands.push(index);
                v.seeds.push(b.seed);
            }
            None => {
                versions.push(LayoutVersion { name: b.version.clone(), commands: vec![index], seeds: vec![b.seed] })
            }
        }
    }
    Layouts { versions }
}

/// Check that the layouts of each version run different programs: the program (first
/// word) of each layout's command, when it is a regular file, must differ in content from
/// every other layout's of the same version. Identical files mean `{layout}` never
/// reached the linker, and the experiment would measure no layout spread at all.
/// Returns a note when the programs cannot be checked (they are not files, or one
/// program serves every layout).
pub fn check_distinct(builds: &[LayoutBuild], programs: &[String]) -> Result<Option<String>, SuiteError> {
    let mut unchecked = Vec::new();
    let versions: Vec<&str> = {
        let mut v: Vec<&str> = builds.iter().map(|b| b.version.as_str()).collect();
        v.dedup();
        v
    };
    for version in versions {
        let mine: Vec<(usize, &LayoutBuild)> =
            builds.iter().enumerate().filter(|(_, b)| b.version == version).collect();
        let paths: Vec<&Path> = mine.iter().map(|(i, _)| Path::new(&programs[*i])).collect();
        let all_files = paths.iter().all(|p| p.is_file());
        let all_distinct = paths.iter().enumerate().all(|(i, p)| paths[..i].iter().all(|q| q != p));
        if !(all_files && all_distinct) {
            unchecked.push(version.to_string());
            continue;
        }
        let contents: Vec<Vec<u8>> = paths
            .iter()
            .map(std::fs::read)
            .collect::<Result<_, _>>()
            .map_err(|source| SuiteError::Read { path: paths[0].to_path_buf(), source })?;
        for i in 0..contents.len() {
            if let Some(j) = (0..i).find(|&j| contents[j] == contents[i]) {
                return Err(SuiteError::SameLayout {
                    build: version.to_string(),
                    first: mine[j].1.build.name.clone(),
                    second: mine[i].1.build.name.clone(),
                    path: paths[i].to_path_buf(),
                });
            }
        }
    }
    Ok((!unchecked.is_empty()).then(|| {
        format!(
            "cannot check that the layouts of {} differ (their commands do not each run their own program file): make sure {{layout}} reaches the linker",
            unchecked.iter().map(|v| format!("`{v}`")).collect::<Vec<_>>().join(", ")
        )
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(name: &str, value: &str, prepare: Option<&str>) -> Build {
        Build { name: name.into(), value: value.into(), prepare: prepare.map(String::from) }
    }

    #[test]
    fn each_layout_gets_its_own_seed_in_path_and_prepare() {
        let b = build("v3", "out/v3-{layout}/prog", Some("make SEED={layout} OUT=out/v3-{layout} {{x}}"));
        let layouts = expand_build(&b, 8, 42).unwrap();
        let seeds: std::collections::BTreeSet<u64> = layouts.iter().map(|l| l.seed).collect();
        assert_eq!(seeds.len(), 8, "distinct seeds");
        assert!(seeds.iter().all(|s| (1..=MAX_SEED).contains(s)));
        let l = &layouts[1];
        assert_eq!(l.build.name, "v3@L2");
        assert_eq!(l.build.value, format!("out/v3-{}/prog", l.seed));
        assert_eq!(
            l.build.prepare.as_deref(),
            Some(format!("make SEED={0} OUT=out/v3-{0} {{{{x}}}}", l.seed).as_str())
        );
        assert_eq!(expand_build(&b, 8, 42).unwrap(), layouts, "the same base seed builds the same layouts");
        let other = expand_build(&build("master", "out/master-{layout}/prog", None), 8, 42).unwrap();
        assert!(other.iter().all(|o| !seeds.contains(&o.seed)), "versions do not share seeds");
    }

    #[test]
    fn a_build_that_ignores_the_layout_is_an_error() {
        let err = expand_build(&build("v3", "out/prog", Some("make")), 4, 1).unwrap_err().to_string();
        assert!(err.contains("build `v3`") && err.contains("{layout}"), "{err}");
    }

    #[test]
    fn layouts_are_grouped_by_version_in_command_order() {
        let mut all = expand_build(&build("a", "a-{layout}", None), 2, 1).unwrap();
        all.extend(expand_build(&build("b", "b-{layout}", None), 3, 1).unwrap());
        let layouts = layouts_of(&all);
        assert_eq!(layouts.versions.len(), 2);
        assert_eq!(layouts.versions[1].commands, [2, 3, 4]);
        assert_eq!(layouts.versions[1].seeds[0], all[2].seed);
    }

    #[test]
    fn identical_programs_are_refused_and_unreadable_ones_noted() {
        let dir = std::env::temp_dir().join(format!("perflab-layouts-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let layouts = expand_build(&build("v", "x-{layout}", None), 3, 9).unwrap();
        let paths: Vec<String> = (0..3).map(|i| dir.join(format!("p{i}")).to_string_lossy().into_owned()).collect();
        for (i, p) in paths.iter().enumerate() {
            std::fs::write(p, format!("binary {i}")).unwrap();
        }
        assert_eq!(check_distinct(&layouts, &paths).unwrap(), None);
        std::fs::write(&paths[2], "binary 0").unwrap();
        let err = check_distinct(&layouts, &paths).unwrap_err().to_string();
        assert!(err.contains("`v@L1` and `v@L3`") && err.contains("identical"), "{err}");
        let shared = vec!["/bin/sh".to_string(); 3];
        assert!(check_distinct(&layouts, &shared).unwrap().unwrap().contains("cannot check that the layouts of `v`"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
