//! Scenario text to a `serde_json::Value`, read as `serde_json` reads it, noting each key that
//! one object writes twice. JSON keeps the last value of such a key and drops the first
//! without a word; in a scenario that is a lost setting (two calls given one name, a fault
//! window's `from` written twice), so `load` reports it.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use super::shape::Step;

/// The document in `text`, and the path of every key an object writes more than once (each
/// once, at its last writing), or serde_json's syntax error.
pub(super) fn read(text: &str) -> Result<(Value, Vec<Vec<Step>>), serde_json::Error> {
    let mut path = Vec::new();
    let mut twice = Vec::new();
    let mut de = serde_json::Deserializer::from_str(text);
    let value = Seed {
        path: &mut path,
        twice: &mut twice,
    }
    .deserialize(&mut de)?;
    de.end()?;
    Ok((value, twice))
}

/// Reads one value at `path`, noting keys written twice in `twice`.
struct Seed<'a> {
    path: &'a mut Vec<Step>,
    twice: &'a mut Vec<Vec<Step>>,
}

impl<'de> DeserializeSeed<'de> for Seed<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(n.into())
    }
    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(n.into())
    }
    fn visit_f64<E>(self, x: f64) -> Result<Value, E> {
        Ok(Number::from_f64(x).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_string()))
    }
    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        loop {
            self.path.push(Step::Index(items.len()));
            let item = seq.next_element_seed(Seed {
                path: self.path,
                twice: self.twice,
            });
            self.path.pop();
            match item? {
                Some(item) => items.push(item),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            self.path.push(Step::Key(key));
            let value = map.next_value_seed(Seed {
                path: self.path,
                twice: self.twice,
            });
            let Some(Step::Key(key)) = self.path.pop() else {
                unreachable!("the key pushed above")
            };
            let value = value?;
            if object.contains_key(&key) {
                let mut at = self.path.clone();
                at.push(Step::Key(key.clone()));
                if !self.twice.contains(&at) {
                    self.twice.push(at);
                }
            }
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_as_serde_json_does_and_notes_each_key_written_twice_once() {
        let text =
            r#"{"a": [1, -2, 2.5, "x", null, true, {"b": 1, "b": 2, "b": 3}], "c": {}, "a": 0}"#;
        let (value, twice) = read(text).unwrap();
        let plain: Value = serde_json::from_str(text).unwrap();
        assert_eq!(value, plain);
        assert_eq!(
            twice,
            vec![
                vec![Step::Key("a".into()), Step::Index(6), Step::Key("b".into())],
                vec![Step::Key("a".into())],
            ]
        );
    }

    #[test]
    fn a_syntax_error_is_serde_jsons() {
        for text in ["{\"a\": }", "[1, 2", "{} x", ""] {
            let ours = read(text).unwrap_err().to_string();
            let theirs = serde_json::from_str::<Value>(text).unwrap_err().to_string();
            assert_eq!(ours, theirs, "{text}");
        }
    }
}
