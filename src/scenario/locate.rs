//! Where a JSON path is in the text of a file: the line and column that a problem's message
//! gives, so that an editor can jump to it.
//!
//! `serde_json::Value` keeps no positions, so the text is scanned once more, following only
//! the keys and indices on the way to the places asked for. The scan is linear in the text and
//! never fails: a place it does not find simply gets no position.

use std::collections::{HashMap, HashSet};

use super::shape::Step;

/// A place in a document: the value at a path, or with `key` the key that leads to it.
pub(super) type Place = (Vec<Step>, bool);

/// The 1-based line and column (in characters) of each of `places` in JSON `text`, or `None`
/// where the text has no such place.
pub(super) fn locate(text: &str, places: &[Place]) -> Vec<Option<(usize, usize)>> {
    if places.is_empty() {
        return Vec::new();
    }
    let mut wanted: HashMap<&Place, Vec<usize>> = HashMap::new();
    let mut on_the_way: HashSet<&[Step]> = HashSet::new();
    for (i, place) in places.iter().enumerate() {
        wanted.entry(place).or_default().push(i);
        for end in 0..=place.0.len() {
            on_the_way.insert(&place.0[..end]);
        }
    }
    let mut scan = Scan {
        bytes: text.as_bytes(),
        at: 0,
        wanted: &wanted,
        on_the_way: &on_the_way,
        offsets: vec![None; places.len()],
        path: Vec::new(),
    };
    scan.value(true);
    let offsets = scan.offsets;
    // Offsets to lines and columns, in one pass over the text.
    let mut sorted: Vec<usize> = offsets.iter().flatten().copied().collect();
    sorted.sort_unstable();
    sorted.dedup();
    let mut positions = HashMap::new();
    let (mut line, mut column) = (1, 1);
    let mut next = sorted.iter().peekable();
    for (i, c) in text.char_indices() {
        while next.peek().is_some_and(|o| **o <= i) {
            positions.insert(*next.next().unwrap_or(&0), (line, column));
        }
        if next.peek().is_none() {
            break;
        }
        if c == '\n' {
            line += 1;
            column = 1;
        } else {
            column += 1;
        }
    }
    offsets
        .iter()
        .map(|o| o.and_then(|o| positions.get(&o).copied()))
        .collect()
}

struct Scan<'a> {
    bytes: &'a [u8],
    at: usize,
    wanted: &'a HashMap<&'a Place, Vec<usize>>,
    on_the_way: &'a HashSet<&'a [Step]>,
    offsets: Vec<Option<usize>>,
    /// The path of the value being scanned (kept only while it leads somewhere wanted).
    path: Vec<Step>,
}

impl Scan<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn space(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    /// Notes the current offset for the place (path, key), if it is wanted. A key written
    /// twice is found where it was written last, as the parser keeps the last value.
    fn note(&mut self, key: bool) {
        let place = (std::mem::take(&mut self.path), key);
        if let Some(indices) = self.wanted.get(&place) {
            for i in indices {
                self.offsets[*i] = Some(self.at);
            }
        }
        self.path = place.0;
    }

    /// Scans one value; `track` says whether its path leads to a wanted place.
    fn value(&mut self, track: bool) {
        self.space();
        if track {
            self.note(false);
        }
        match self.peek() {
            Some(b'{') => self.object(track),
            Some(b'[') => self.array(track),
            Some(b'"') => {
                self.string();
            }
            Some(_) => {
                while !matches!(
                    self.peek(),
                    None | Some(b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r')
                ) {
                    self.at += 1;
                }
            }
            None => {}
        }
    }

    fn object(&mut self, track: bool) {
        self.at += 1;
        loop {
            self.space();
            match self.peek() {
                Some(b'"') => {}
                Some(_) => {
                    self.at += 1;
                    return;
                }
                None => return,
            }
            let key_at = self.at;
            let bytes = self.bytes;
            let key = &bytes[self.string()];
            self.space();
            if self.peek() == Some(b':') {
                self.at += 1;
            }
            if track {
                self.path.push(Step::Key(key_text(key)));
                let deeper = self.on_the_way.contains(self.path.as_slice());
                let here = self.at;
                self.at = key_at;
                self.note(true);
                self.at = here;
                self.value(deeper);
                self.path.pop();
            } else {
                self.value(false);
            }
            self.space();
            if self.peek() == Some(b',') {
                self.at += 1;
            }
        }
    }

    fn array(&mut self, track: bool) {
        self.at += 1;
        let mut i = 0;
        loop {
            self.space();
            match self.peek() {
                Some(b']') => {
                    self.at += 1;
                    return;
                }
                None => return,
                Some(_) => {}
            }
            let before = self.at;
            if track {
                self.path.push(Step::Index(i));
                let deeper = self.on_the_way.contains(self.path.as_slice());
                self.value(deeper);
                self.path.pop();
            } else {
                self.value(false);
            }
            i += 1;
            self.space();
            match self.peek() {
                Some(b',') => self.at += 1,
                // Not JSON (the text has been parsed before, so never so): stop.
                _ if self.at == before => return,
                _ => {}
            }
        }
    }

    /// Skips a string and returns where it was written, quotes included.
    fn string(&mut self) -> std::ops::Range<usize> {
        let start = self.at;
        self.at += 1;
        while let Some(b) = self.peek() {
            self.at += if b == b'\\' { 2 } else { 1 };
            if b == b'"' {
                break;
            }
        }
        self.at = self.at.min(self.bytes.len());
        start..self.at
    }
}

/// A key as the parser reads it (escapes decoded).
fn key_text(written: &[u8]) -> String {
    if !written.contains(&b'\\') {
        let inner = written
            .get(1..written.len().saturating_sub(1))
            .unwrap_or_default();
        return String::from_utf8_lossy(inner).into_owned();
    }
    serde_json::from_slice(written).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::shape::parse;

    #[test]
    fn places_are_found_by_path_with_lines_and_columns_in_characters() {
        let text = "{\n  \"a\": {\"b\": [1, {\"c\": \"é\"}, 3]},\n  \"\\u0064\": true, \"é\": {\"x\": 1}\n}";
        let places = [
            (parse("a.b[1].c"), false),
            (parse("a.b[1].c"), true),
            (parse("a.b[2]"), false),
            (parse("d"), true),
            (parse("é.x"), false),
            (parse("a.missing"), false),
            (parse("a.b[9]"), false),
            (Vec::new(), false),
        ];
        let found = locate(text, &places);
        assert_eq!(
            found,
            [
                Some((2, 24)),
                Some((2, 19)),
                Some((2, 30)),
                Some((3, 3)),
                Some((3, 30)),
                None,
                None,
                Some((1, 1)),
            ]
        );
    }

    #[test]
    fn a_key_written_twice_is_found_where_it_was_written_last() {
        let found = locate(r#"{"a": 1, "a": 2}"#, &[(parse("a"), false)]);
        assert_eq!(found, [Some((1, 15))]);
    }

    #[test]
    fn text_that_is_not_json_gives_no_positions_and_no_panic() {
        for text in [
            "",
            "{",
            "[1,",
            "{\"a\"",
            "{\"a\": [",
            "\"abc",
            "{\"a\": 1,,,}",
            "]]]",
            "{1: 2}",
        ] {
            let _ = locate(text, &[(parse("a[0].b"), false), (parse("a"), true)]);
        }
    }
}
