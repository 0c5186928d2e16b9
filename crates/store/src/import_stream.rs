//! Reading an import file a record at a time: which format it is (one pass keeping
//! nothing), then its records handed over one by one as they are parsed — an export of
//! 100,000 runs is never a `serde_json::Value` of the whole file (1.16 GB for 53 MB
//! before). A perflab result (`compare --json`) is one experiment, read whole.
//!
//! Hand-written serde visitors because serde_json reads a document whole unless its
//! arrays are visited element by element; no crate streams nested arrays of typed
//! records.

use super::error::ImportError;
use super::StoredExperiment;
use perflab_model::Experiment;
use serde::de::{self, DeserializeOwned, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::cell::Cell;
use std::fmt;
use std::io::Read;
use std::marker::PhantomData;
use std::rc::Rc;

/// The `format` of the file `perflab export` writes.
pub(super) const EXPORT_FORMAT: &str = "perflab-export";

/// The formats `perflab import` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `perflab export`: `{"format": "perflab-export", "experiments": [...]}`.
    Export,
    /// `perflab run --json`: `[{"benchmark", "label", "experiment"}, ...]`.
    RunArray,
    /// hyperfine's `--export-json`: `{"results": [...]}`.
    Hyperfine,
    /// `perflab compare --json`: one experiment.
    Result,
}

/// A reader that counts the lines serde_json has taken (it reads a byte at a time), so
/// that a refused record can be named by its line.
struct LineCounting<R> {
    inner: R,
    lines: Rc<Cell<u64>>,
}

impl<R: Read> Read for LineCounting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let newlines = buf[..n].iter().filter(|&&b| b == b'\n').count() as u64;
        self.lines.set(self.lines.get() + newlines);
        Ok(n)
    }
}

type Json = serde_json::Deserializer<serde_json::de::IoRead<LineCounting<std::io::BufReader<std::fs::File>>>>;

/// A JSON reader over `file` (a regular file only) and its line count.
fn open(file: &str) -> Result<(Json, Rc<Cell<u64>>), ImportError> {
    let opened = perflab_sys::files::open_regular(file)
        .map_err(|source| ImportError::Read { file: file.to_string(), source })?;
    let lines = Rc::new(Cell::new(0));
    let reader = LineCounting { inner: std::io::BufReader::with_capacity(1 << 16, opened), lines: lines.clone() };
    Ok((serde_json::Deserializer::from_reader(reader), lines))
}

/// The format of `file`, None when it is none of them (a syntax error is `NotJson`).
pub fn detect(file: &str) -> Result<Option<Kind>, ImportError> {
    let (mut json, _) = open(file)?;
    let not_json = |source| ImportError::NotJson { file: file.to_string(), source };
    let kind = de::Deserializer::deserialize_any(&mut json, Detect).map_err(not_json)?;
    json.end().map_err(not_json)?;
    Ok(kind)
}

/// Visits the top level, keeping only which keys (and `format`'s text) it has.
struct Detect;

impl<'de> Visitor<'de> for Detect {
    type Value = Option<Kind>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON document")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut all_runs = true;
        while let Some(has) = seq.next_element_seed(HasKey("experiment"))? {
            all_runs &= has;
        }
        Ok(all_runs.then_some(Kind::RunArray))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut export, mut results, mut schema, mut commands) = (false, false, false, false);
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "format" => export = map.next_value::<Text>()?.0.as_deref() == Some(EXPORT_FORMAT),
                "results" => results = map.next_value::<IsArray>()?.0,
                "schema_version" => {
                    schema = true;
                    map.next_value::<IgnoredAny>()?;
                }
                "commands" => {
                    commands = true;
                    map.next_value::<IgnoredAny>()?;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(if export {
            Some(Kind::Export)
        } else if results {
            Some(Kind::Hyperfine)
        } else if schema && commands {
            Some(Kind::Result)
        } else {
            None
        })
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

/// A string's text, or None for any other value (skipped without keeping it).
struct Text(Option<String>);

impl<'de> de::Deserialize<'de> for Text {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_str<E>(self, v: &str) -> Result<Text, E> {
                Ok(Text(Some(v.to_string())))
            }
            fn visit_bool<E>(self, _: bool) -> Result<Text, E> {
                Ok(Text(None))
            }
            fn visit_i64<E>(self, _: i64) -> Result<Text, E> {
                Ok(Text(None))
            }
            fn visit_u64<E>(self, _: u64) -> Result<Text, E> {
                Ok(Text(None))
            }
            fn visit_f64<E>(self, _: f64) -> Result<Text, E> {
                Ok(Text(None))
            }
            fn visit_unit<E>(self) -> Result<Text, E> {
                Ok(Text(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Text, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Text(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Text, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(Text(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// Whether a value is an array (skipped without keeping it).
struct IsArray(bool);

impl<'de> de::Deserialize<'de> for IsArray {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = IsArray;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<IsArray, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(IsArray(true))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<IsArray, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(IsArray(false))
            }
            fn visit_bool<E>(self, _: bool) -> Result<IsArray, E> {
                Ok(IsArray(false))
            }
            fn visit_i64<E>(self, _: i64) -> Result<IsArray, E> {
                Ok(IsArray(false))
            }
            fn visit_u64<E>(self, _: u64) -> Result<IsArray, E> {
                Ok(IsArray(false))
            }
            fn visit_f64<E>(self, _: f64) -> Result<IsArray, E> {
                Ok(IsArray(false))
            }
            fn visit_str<E>(self, _: &str) -> Result<IsArray, E> {
                Ok(IsArray(false))
            }
            fn visit_unit<E>(self) -> Result<IsArray, E> {
                Ok(IsArray(false))
            }
        }
        d.deserialize_any(V)
    }
}

/// Whether a value is an object with the key (skipped without keeping it).
struct HasKey(&'static str);

impl<'de> DeserializeSeed<'de> for HasKey {
    type Value = bool;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for HasKey {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any value")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let mut has = false;
        while let Some(key) = map.next_key::<String>()? {
            has |= key == self.0;
            map.next_value::<IgnoredAny>()?;
        }
        Ok(has)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<bool, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(false)
    }
    fn visit_bool<E>(self, _: bool) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_i64<E>(self, _: i64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_u64<E>(self, _: u64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_f64<E>(self, _: f64) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_str<E>(self, _: &str) -> Result<bool, E> {
        Ok(false)
    }
    fn visit_unit<E>(self) -> Result<bool, E> {
        Ok(false)
    }
}

/// Where the records go: each with the line it ends on; a refusal is kept here (serde
/// can only be told to stop).
struct Sink<'f, T> {
    each: &'f mut dyn FnMut(T, u64) -> Result<(), ImportError>,
    lines: Rc<Cell<u64>>,
    refused: Option<ImportError>,
}

/// The elements of an array, each parsed as `T` and handed to the sink.
struct Elements<'s, 'f, T>(&'s mut Sink<'f, T>);

impl<'de, T: DeserializeOwned> DeserializeSeed<'de> for Elements<'_, '_, T> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, T: DeserializeOwned> Visitor<'de> for Elements<'_, '_, T> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(item) = seq.next_element::<T>()? {
            let line = self.0.lines.get() + 1;
            if let Err(refused) = (self.0.each)(item, line) {
                self.0.refused = Some(refused);
                return Err(de::Error::custom("refused"));
            }
        }
        Ok(())
    }
}

/// An object whose `key` holds the array of records (other keys skipped).
struct ArrayUnder<'s, 'f, T> {
    key: &'static str,
    sink: &'s mut Sink<'f, T>,
    _t: PhantomData<T>,
}

impl<'de, T: DeserializeOwned> Visitor<'de> for ArrayUnder<'_, '_, T> {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "an object with `{}`", self.key)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let mut found = false;
        while let Some(key) = map.next_key::<String>()? {
            if key == self.key && !found {
                found = true;
                map.next_value_seed(Elements(self.sink))?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

/// Run a streaming read: `read` drives serde, the sink receives the records; a refusal
/// from the sink wins over serde's "refused".
fn drive<T>(
    file: &str,
    kind: &'static str,
    each: &mut dyn FnMut(T, u64) -> Result<(), ImportError>,
    read: impl FnOnce(&mut Json, &mut Sink<'_, T>) -> serde_json::Result<bool>,
) -> Result<(), ImportError> {
    let (mut json, lines) = open(file)?;
    let mut sink = Sink { each, lines, refused: None };
    let outcome = read(&mut json, &mut sink).and_then(|found| json.end().map(|()| found));
    if let Some(refused) = sink.refused {
        return Err(refused);
    }
    match outcome {
        Ok(true) => Ok(()),
        Ok(false) => Err(ImportError::Invalid {
            file: file.to_string(),
            kind,
            source: de::Error::custom("the list of results is missing"),
        }),
        Err(source) => Err(ImportError::Invalid { file: file.to_string(), kind, source }),
    }
}

/// The experiments of a perflab export, one at a time.
pub fn export(
    file: &str,
    each: &mut dyn FnMut(StoredExperiment, u64) -> Result<(), ImportError>,
) -> Result<(), ImportError> {
    drive(file, "perflab export", each, |json, sink| {
        de::Deserializer::deserialize_map(json, ArrayUnder { key: "experiments", sink, _t: PhantomData })
    })
}

/// The records of a `perflab run --json` file, one at a time.
pub(crate) fn run_array<T: DeserializeOwned>(
    file: &str,
    each: &mut dyn FnMut(T, u64) -> Result<(), ImportError>,
) -> Result<(), ImportError> {
    drive(file, "`perflab run --json` file", each, |json, sink| Elements(sink).deserialize(json).map(|()| true))
}

/// The results of a hyperfine export, one at a time.
pub fn hyperfine<T: DeserializeOwned>(
    file: &str,
    each: &mut dyn FnMut(T, u64) -> Result<(), ImportError>,
) -> Result<(), ImportError> {
    drive(file, "hyperfine JSON export", each, |json, sink| {
        de::Deserializer::deserialize_map(json, ArrayUnder { key: "results", sink, _t: PhantomData })
    })
}

/// A perflab result: one experiment.
pub fn result(file: &str) -> Result<Experiment, ImportError> {
    let (mut json, _) = open(file)?;
    let invalid = |source| ImportError::Invalid { file: file.to_string(), kind: "perflab result", source };
    let experiment: Experiment = de::Deserialize::deserialize(&mut json).map_err(invalid)?;
    json.end().map_err(invalid)?;
    Ok(experiment)
}
