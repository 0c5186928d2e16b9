//! JIT attribution while converting: code outside any file mapping in a process that
//! wrote a perf map is attributed to the map — its frames become (map object, address),
//! named from the map — and the symbols of every sampled JIT address are kept in the
//! profile (the map file may be gone when the profile is read).

use super::converter::Objects;
use crate::profile::format::{FrameRef, JitSymbol, Profile, Space};
use crate::profile::jitmap::{self, JitMap};
use std::collections::{BTreeMap, HashMap};

#[derive(Default)]
pub(crate) struct JitObjects {
    /// Per pid: the perf map and its object index, None when the process has none.
    maps: HashMap<u32, Option<(JitMap, u32)>>,
}

impl JitObjects {
    pub(crate) fn attribute(&mut self, pid: u32, frame: FrameRef, objects: &mut Objects) -> FrameRef {
        if frame.space != Space::Unmapped {
            return frame;
        }
        let map = self.maps.entry(pid).or_insert_with(|| {
            let map = JitMap::read(pid)?;
            let object = objects.id(&jitmap::map_path(pid).display().to_string());
            Some((map, object))
        });
        match map {
            Some((_, object)) => FrameRef { space: Space::User, object: Some(*object), offset: frame.offset },
            None => frame,
        }
    }

    /// The symbols of every sampled JIT address, each once.
    pub(crate) fn symbols(&self, profile: &Profile) -> Vec<JitSymbol> {
        let by_object: HashMap<u32, &JitMap> = self.maps.values().flatten().map(|(map, o)| (*o, map)).collect();
        let addresses = profile
            .samples
            .iter()
            .map(|s| (s.object, s.offset))
            .chain(profile.frames.iter().map(|f| (f.object, f.offset)));
        let mut symbols: BTreeMap<(u32, u64), JitSymbol> = BTreeMap::new();
        for (object, address) in addresses {
            let Some((object, map)) = object.and_then(|o| Some((o, *by_object.get(&o)?))) else { continue };
            if let Some((start, size, name)) = map.lookup(address) {
                symbols.entry((object, start)).or_insert_with(|| JitSymbol {
                    object,
                    start,
                    size,
                    name: name.to_string(),
                });
            }
        }
        symbols.into_values().collect()
    }
}
