//! The object table of a profile being built: each mapped path numbered once, in the
//! order the converter first meets it.

use crate::format::ObjectRef;
use std::collections::HashMap;

/// The object table of the profile being built: each mapped path numbered once.
#[derive(Default)]
pub(crate) struct Objects {
    ids: HashMap<String, u32>,
    pub(crate) list: Vec<ObjectRef>,
}

impl Objects {
    pub(crate) fn id(&mut self, path: &str) -> u32 {
        if let Some(&id) = self.ids.get(path) {
            return id;
        }
        let id = self.list.len() as u32;
        self.ids.insert(path.to_string(), id);
        self.list.push(ObjectRef { path: path.to_string() });
        id
    }
}
