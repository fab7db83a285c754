//! Streaming detokenization: text handed out token by token whose concatenation is exactly the
//! one-shot `Tokenizer::decode` of all the ids (cut at the first stop string).
//!
//! One token may carry part of a character: byte-level BPE splits a CJK character or an emoji
//! into byte tokens, and byte-fallback vocabularies spell it as `<0xE4>`-style tokens. Decoding
//! such a prefix gives U+FFFD for the incomplete sequence, and the character it becomes only
//! shows when its last byte arrives. So each step decodes all ids (the one-shot decode, which is
//! what `--json` prints), holds back a trailing run of U+FFFD (an incomplete sequence) and any
//! tail that could still grow into a stop string, and hands out what lies between the text
//! already handed out and that held-back tail. `finish` hands out the rest: a sequence that never
//! completed shows as the decoder's U+FFFD, as in the one-shot decode.
//!
//! This relies on the decode of a prefix of the ids being a prefix of the decode of all of them,
//! up to that trailing U+FFFD run. The byte-level decoder holds to it (UTF-8 decoding is left to
//! right). The byte-fallback decoder does not quite: it decodes each run of `<0xHH>` tokens as one
//! piece and, should the run hold any invalid or unfinished sequence, turns every byte of the run
//! into U+FFFD, characters already complete included. So a run of byte tokens is held back whole
//! until a token of another kind ends it (or `finish`); byte runs are short in practice (a few
//! characters the vocabulary lacks). The Metaspace / Strip steps only touch the start. A decoder that rewrites earlier text
//! (WordPiece's cleanup of " ." into ".") does not; there the stream carries on after the text
//! already handed out and can differ from the one-shot decode around the rewritten spot.
use super::tokenizer::Tokenizer;
use crate::error::Result;

#[derive(Default)]
pub struct StreamDecoder {
    ids: Vec<u32>,
    /// The one-shot decode of `ids`.
    text: String,
    /// Bytes of `text` handed out.
    emitted: usize,
    stops: Vec<String>,
    /// Where in `text` the earliest stop string starts, once one has appeared.
    stop_at: Option<usize>,
    /// While the last tokens are byte-fallback tokens: the length of `text` before the first.
    byte_run_from: Option<usize>,
}

/// A byte-fallback token: `<0xHH>`, the spelling the byte-fallback decoder turns into a byte.
pub fn is_byte_token(spelling: &str) -> bool {
    let b = spelling.as_bytes();
    b.len() == 6 && spelling.starts_with("<0x") && b[5] == b'>' && b[3..5].iter().all(u8::is_ascii_hexdigit)
}

impl StreamDecoder {
    /// A decoder that ends the text before the first of `stops` (none: never).
    pub fn new(stops: &[String]) -> StreamDecoder {
        StreamDecoder {
            stops: stops.iter().filter(|s| !s.is_empty()).cloned().collect(),
            ..Default::default()
        }
    }

    /// Adds one token and returns the text that became final with it (often empty). After a stop
    /// string has appeared, tokens are recorded but add no text.
    pub fn push(&mut self, tok: &Tokenizer, id: u32) -> Result<String> {
        self.ids.push(id);
        if self.stop_at.is_some() {
            return Ok(String::new());
        }
        if tok.id_to_token(id).is_some_and(|t| is_byte_token(&t)) {
            self.byte_run_from.get_or_insert(self.text.len());
        } else {
            self.byte_run_from = None;
        }
        self.text = tok.decode(&self.ids)?;
        self.stop_at = self.stops.iter().filter_map(|s| self.text.find(s.as_str())).min();
        let ready = match self.stop_at {
            Some(p) => p,
            None => {
                let stable = self.text.trim_end_matches('\u{FFFD}').len();
                let ready = stable - self.partial_stop(stable);
                ready.min(self.byte_run_from.unwrap_or(ready))
            }
        };
        Ok(self.hand_out(ready))
    }

    /// The rest of the text: what was held back (an incomplete UTF-8 sequence that never
    /// completed, a tail that might have begun a stop string).
    pub fn finish(&mut self) -> String {
        let end = self.stop_at.unwrap_or(self.text.len());
        self.hand_out(end)
    }

    /// True once a stop string has appeared.
    pub fn stopped(&self) -> bool {
        self.stop_at.is_some()
    }

    /// The one-shot decode of every id pushed, cut before the first stop string.
    pub fn text(&self) -> &str {
        &self.text[..self.stop_at.unwrap_or(self.text.len())]
    }

    pub fn ids(&self) -> &[u32] {
        &self.ids
    }

    /// Hands out `text[emitted..end]`. Should a decoder have rewritten text already handed out,
    /// the stream carries on from the next character boundary (nothing can be taken back).
    fn hand_out(&mut self, end: usize) -> String {
        let mut from = self.emitted.min(self.text.len());
        while !self.text.is_char_boundary(from) {
            from += 1;
        }
        if end <= from {
            return String::new();
        }
        self.emitted = end;
        self.text[from..end].to_string()
    }

    /// Length of the longest tail of `text[..end]` that a stop string starts with.
    fn partial_stop(&self, end: usize) -> usize {
        let longest = self.stops.iter().map(|s| s.len()).max().unwrap_or(0);
        let head = &self.text[..end];
        let mut start = end.saturating_sub(longest);
        while !head.is_char_boundary(start) {
            start += 1;
        }
        head[start..]
            .char_indices()
            .map(|(i, _)| start + i)
            .find(|&i| self.stops.iter().any(|s| s.starts_with(&head[i..])))
            .map_or(0, |i| end - i)
    }
}
