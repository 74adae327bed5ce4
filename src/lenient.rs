//! Reading back JSON in which non-finite numbers became `null`.
//!
//! serde_json writes `f64::NAN` and infinities as `null` (JSON has no other spelling) but
//! refuses `null` where it expects an `f64`, so a report holding, say, the max/min ratio of
//! a lock whose slowest thread never acquired (∞) could be written but not read. This
//! deserializer wraps a [`serde_json::Value`] and behaves exactly like it, except that
//! `null` read as `f64`/`f32` becomes NaN. Renderers print NaN as `–`.

use serde::de::{self, DeserializeSeed, IntoDeserializer, Visitor};
use serde::forward_to_deserialize_any;
use serde_json::{Map, Value};

/// A [`Value`] that reads `null` as NaN where a float is expected.
pub struct Lenient(pub Value);

/// Reads a `T` from `v` through [`Lenient`]; an error names where in the document it is,
/// as a JSON path (`phases[2].status: unknown variant ...`), so that a hand-edited or
/// foreign `results.json` says which field to look at.
pub fn from_value<T: serde::de::DeserializeOwned>(v: Value) -> Result<T, String> {
    serde_path_to_error::deserialize(Lenient(v)).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." {
            inner.to_string()
        } else {
            format!("at `{path}`: {inner}")
        }
    })
}

type Error = serde_json::Error;

impl<'de> de::Deserializer<'de> for Lenient {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Null => v.visit_unit(),
            Value::Bool(b) => v.visit_bool(b),
            Value::Number(n) => de::Deserializer::deserialize_any(n, v),
            Value::String(s) => v.visit_string(s),
            Value::Array(a) => v.visit_seq(Seq(a.into_iter())),
            Value::Object(m) => v.visit_map(MapAccess {
                iter: m.into_iter(),
                value: None,
            }),
        }
    }

    fn deserialize_f64<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Null => v.visit_f64(f64::NAN),
            other => Lenient(other).deserialize_any(v),
        }
    }

    fn deserialize_f32<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Null => v.visit_f32(f32::NAN),
            other => Lenient(other).deserialize_any(v),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, v: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Null => v.visit_none(),
            other => v.visit_some(Lenient(other)),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        v: V,
    ) -> Result<V::Value, Error> {
        v.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Error> {
        match self.0 {
            Value::String(s) => v.visit_enum(s.into_deserializer()),
            Value::Object(m) if m.len() == 1 => {
                let (variant, value) = m.into_iter().next().expect("one entry");
                v.visit_enum(Enum { variant, value })
            }
            other => Err(de::Error::invalid_type(unexpected(&other), &"an enum")),
        }
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 char str string bytes byte_buf unit
        unit_struct seq tuple tuple_struct map struct identifier ignored_any
    }
}

fn unexpected(v: &Value) -> de::Unexpected<'_> {
    match v {
        Value::Null => de::Unexpected::Unit,
        Value::Bool(b) => de::Unexpected::Bool(*b),
        Value::Number(_) => de::Unexpected::Other("number"),
        Value::String(s) => de::Unexpected::Str(s),
        Value::Array(_) => de::Unexpected::Seq,
        Value::Object(_) => de::Unexpected::Map,
    }
}

struct Seq(std::vec::IntoIter<Value>);

impl<'de> de::SeqAccess<'de> for Seq {
    type Error = Error;
    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        match self.0.next() {
            Some(v) => seed.deserialize(Lenient(v)).map(Some),
            None => Ok(None),
        }
    }
    fn size_hint(&self) -> Option<usize> {
        Some(self.0.len())
    }
}

struct MapAccess {
    iter: <Map<String, Value> as IntoIterator>::IntoIter,
    value: Option<Value>,
}

impl<'de> de::MapAccess<'de> for MapAccess {
    type Error = Error;
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        match self.iter.next() {
            Some((k, v)) => {
                self.value = Some(v);
                seed.deserialize(k.into_deserializer()).map(Some)
            }
            None => Ok(None),
        }
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let v = self
            .value
            .take()
            .ok_or_else(|| de::Error::custom("a map value was read before its key"))?;
        seed.deserialize(Lenient(v))
    }
}

struct Enum {
    variant: String,
    value: Value,
}

impl<'de> de::EnumAccess<'de> for Enum {
    type Error = Error;
    type Variant = Lenient;
    fn variant_seed<V: DeserializeSeed<'de>>(self, seed: V) -> Result<(V::Value, Lenient), Error> {
        let d: de::value::StringDeserializer<Error> = self.variant.into_deserializer();
        Ok((seed.deserialize(d)?, Lenient(self.value)))
    }
}

impl<'de> de::VariantAccess<'de> for Lenient {
    type Error = Error;
    fn unit_variant(self) -> Result<(), Error> {
        match self.0 {
            Value::Null => Ok(()),
            other => Err(de::Error::invalid_type(
                unexpected(&other),
                &"a unit variant",
            )),
        }
    }
    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, Error> {
        seed.deserialize(self)
    }
    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, v: V) -> Result<V::Value, Error> {
        de::Deserializer::deserialize_any(self, v)
    }
    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        v: V,
    ) -> Result<V::Value, Error> {
        de::Deserializer::deserialize_any(self, v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::{Deserialize, Serialize};

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "kebab-case")]
    enum Kind {
        Plain,
        Tagged(u32),
        Shaped { a: f64 },
    }

    #[derive(Debug, Serialize, Deserialize)]
    struct S {
        x: f64,
        y: Option<f64>,
        z: Vec<(Kind, u64)>,
        k: Kind,
        t: Kind,
        name: String,
    }

    #[test]
    fn non_finite_round_trips_as_nan_and_the_rest_exactly() {
        let s = S {
            x: f64::INFINITY,
            y: None,
            z: vec![(Kind::Plain, 3), (Kind::Tagged(7), 4)],
            k: Kind::Shaped { a: f64::NAN },
            t: Kind::Shaped { a: 0.1 },
            name: "n".into(),
        };
        let text = serde_json::to_string(&s).unwrap();
        assert!(
            serde_json::from_str::<S>(&text).is_err(),
            "plain serde_json refuses null f64"
        );
        let v: Value = serde_json::from_str(&text).unwrap();
        let back = S::deserialize(Lenient(v)).unwrap();
        assert!(back.x.is_nan());
        assert_eq!(back.y, None);
        assert_eq!(back.z, s.z);
        assert!(matches!(back.k, Kind::Shaped { a } if a.is_nan()));
        assert_eq!(back.t, Kind::Shaped { a: 0.1 });
        assert_eq!(back.name, "n");
    }

    #[test]
    fn errors_name_the_json_path() {
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct Inner {
            status: Kind,
        }
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct Outer {
            phases: Vec<Inner>,
            x: f64,
        }
        let v: Value = serde_json::from_str(
            r#"{"x": 1, "phases": [{"status": "plain"}, {"status": "bogus"}]}"#,
        )
        .unwrap();
        let e = from_value::<Outer>(v).unwrap_err();
        assert!(
            e.starts_with("at `phases[1].status`: unknown variant `bogus`"),
            "{e}"
        );
        let v: Value = serde_json::from_str(r#"{"phases": []}"#).unwrap();
        let e = from_value::<Outer>(v).unwrap_err();
        assert!(e.contains("missing field `x`"), "{e}");
        let v: Value = serde_json::from_str(r#"{"phases": [], "x": null}"#).unwrap();
        assert!(from_value::<Outer>(v).unwrap().x.is_nan());
    }

    #[test]
    fn type_errors_still_surface() {
        let v: Value = serde_json::from_str(r#"{"x": "no"}"#).unwrap();
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct T {
            x: f64,
        }
        assert!(T::deserialize(Lenient(v)).is_err());
    }
}
