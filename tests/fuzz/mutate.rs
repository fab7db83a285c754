//! A small deterministic mutator: the same seed gives the same inputs on every machine. Byte-level
//! operations (bit flips, random bytes, insert, delete, duplicate, truncate, splice with another
//! corpus entry, interesting integers written in place) and, for the JSON and Jinja inputs,
//! textual ones (interesting numbers written as text, structural characters). Positions favour
//! the first 4 KiB half of the time: the headers the readers parse live there, and most seed
//! bytes (tensor data) are read by nothing but a copy.
use wgllm::util::Rng;

pub struct Mutator {
    rng: Rng,
}

const INTS: [u64; 16] = [
    0,
    1,
    2,
    0x7f,
    0x80,
    0xff,
    0x7fff,
    0xffff,
    0x7fff_ffff,
    0x8000_0000,
    0xffff_ffff,
    1 << 32,
    (1 << 40) + 1,
    0x7fff_ffff_ffff_ffff,
    0x8000_0000_0000_0020,
    u64::MAX,
];

const TEXTS: [&str; 22] = [
    "0",
    "-1",
    "1e300",
    "1e-50",
    "NaN",
    "18446744073709551615",
    "9223372036854775840",
    "4294967296",
    "10000000",
    "null",
    "true",
    "[]",
    "{}",
    "\"\"",
    "\"",
    "{",
    "}",
    "[",
    ",",
    "\\u0000",
    "{% for i in range(100000) %}",
    "{{ 'x' * 100000 }}",
];

impl Mutator {
    pub fn new(seed: u64) -> Mutator {
        Mutator { rng: Rng::new(seed) }
    }

    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.rng.next_u64() % n as u64) as usize
        }
    }

    fn pos(&mut self, len: usize) -> usize {
        if len > 4096 && self.below(2) == 0 {
            self.below(4096)
        } else {
            self.below(len)
        }
    }

    /// `base` with 1 to 4 mutations stacked; `other` is another corpus entry for splicing.
    pub fn mutate(&mut self, base: &[u8], other: &[u8]) -> Vec<u8> {
        let mut v = base.to_vec();
        for _ in 0..1 + self.below(4) {
            self.one(&mut v, other);
        }
        v
    }

    fn one(&mut self, v: &mut Vec<u8>, other: &[u8]) {
        let len = v.len();
        match self.below(11) {
            0 if len > 0 => {
                let p = self.pos(len);
                v[p] ^= 1 << self.below(8);
            }
            1 if len > 0 => {
                let p = self.pos(len);
                v[p] = self.rng.next_u64() as u8;
            }
            2 => {
                let p = self.pos(len + 1);
                let n = 1 + self.below(8);
                for _ in 0..n {
                    v.insert(p.min(v.len()), self.rng.next_u64() as u8);
                }
            }
            3 if len > 0 => {
                let p = self.pos(len);
                let n = (1 + self.below(64)).min(len - p);
                v.drain(p..p + n);
            }
            4 if len > 0 => {
                let p = self.pos(len);
                v.truncate(p);
            }
            5 if len > 0 => {
                // duplicate a chunk in place
                let p = self.pos(len);
                let n = (1 + self.below(256)).min(len - p);
                let chunk = v[p..p + n].to_vec();
                let at = self.pos(v.len() + 1);
                v.splice(at..at, chunk);
            }
            6 if !other.is_empty() => {
                // splice: our head, the other entry's tail
                let p = self.pos(len + 1);
                let q = self.pos(other.len());
                v.truncate(p);
                v.extend_from_slice(&other[q..]);
            }
            7 if len > 0 => {
                let x = INTS[self.below(INTS.len())];
                let w = [1usize, 2, 4, 8][self.below(4)];
                let p = self.pos(len);
                for (i, b) in x.to_le_bytes().iter().take(w).enumerate() {
                    if p + i < v.len() {
                        v[p + i] = *b;
                    }
                }
            }
            8 => {
                // a digit run (or any position) replaced with an interesting number as text
                let t = TEXTS[self.below(TEXTS.len())].as_bytes();
                let p = self.pos(len + 1);
                let mut end = p;
                while end < v.len() && v[end].is_ascii_digit() {
                    end += 1;
                }
                v.splice(p..end, t.iter().copied());
            }
            9 if len > 0 => {
                // a whole value of this many digits replaced: find the next digit first
                let p = self.pos(len);
                if let Some(off) = v[p..].iter().position(|b| b.is_ascii_digit()) {
                    let s = p + off;
                    let mut e = s;
                    while e < v.len() && (v[e].is_ascii_digit() || v[e] == b'.' || v[e] == b'e' || v[e] == b'-') {
                        e += 1;
                    }
                    let t = TEXTS[self.below(9)].as_bytes();
                    v.splice(s..e, t.iter().copied());
                }
            }
            _ => {
                let p = self.pos(len + 1);
                let c = [b'"', b'{', b'}', b'[', b']', b',', b':', b'\\', 0, b'\n', 0xff][self.below(11)];
                v.insert(p.min(v.len()), c);
            }
        }
    }
}
