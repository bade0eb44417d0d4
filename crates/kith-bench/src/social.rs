//! `gen social`: an LDBC-SNB-like social network, deterministic from a seed.
//!
//! Files (CSV with a header line, loadable by KithDB and Kùzu alike):
//! - `person.csv`: `id,firstName,lastName,gender,birthday,creationDate`
//!   (birthday a DATE in 1950..2000, creationDate a TIMESTAMP in 2010..2012)
//! - `knows.csv`: `from,to,creationDate` (Person→Person, no self loops;
//!   each friendship stored once, as in LDBC; rare duplicates between hubs
//!   are kept)
//! - `post.csv`, `comment.csv`: `id,creationDate,content,length`; comment
//!   ids follow the post ids (one message id space, as in LDBC)
//! - `post_hascreator.csv`, `comment_hascreator.csv`: `from,to` (→Person)
//! - `comment_replyof.csv`: `from,to` (Comment→Post)
//! - `likes.csv`: `from,to,creationDate` (Person→Post)
//! - `meta.json`: parameters, counts, and query parameters (`params`).
//!
//! Degrees follow a power law: every person has a rank r (a fixed
//! permutation of the ids) and is picked as a KNOWS endpoint, message
//! creator or liker with probability ∝ (r+1)^-β (Chung–Lu style), which
//! gives a degree distribution with exponent 1 + 1/β (≈ 2.7 for β = 0.6).
//! Posts are replied to and liked with the same kind of skew. Every value
//! is drawn from per-chunk xoshiro streams, so the bytes do not depend on
//! the number of generator threads.

use std::io;
use std::path::Path;
use std::time::Instant;

use crate::fastfmt::{push_u64, push_u64_padded};
use crate::gen::{write_chunked, GenSummary, CHUNK};
use crate::json::Json;
use crate::rng::{mix, Xoshiro256};

const TAG_PERSON: u64 = 0x5045_5253;
const TAG_KNOWS: u64 = 0x4B4E_4F57;
const TAG_POST: u64 = 0x504F_5354;
const TAG_COMMENT: u64 = 0x434F_4D4D;
const TAG_LIKES: u64 = 0x4C49_4B45;

/// Seconds from 1970 to 2010-01-01.
const EPOCH_2010: u64 = 1_262_304_000;
const YEAR_S: u64 = 365 * 86_400;
/// Days from 1970 to 1950-01-01 is negative; birthdays are days after 1950-01-01.
const DAYS_1950_TO_1970: i64 = 7305;

const FIRST_NAMES: &[&str] = &[
    "Ada", "Alan", "Anna", "Bao", "Carla", "Chen", "David", "Elena", "Emil", "Fatima", "Hans",
    "Ines", "Ivan", "Jin", "Karim", "Lea", "Luis", "Maria", "Mehmet", "Mia", "Nadia", "Omar",
    "Priya", "Raj", "Rosa", "Sara", "Semih", "Tom", "Yuki", "Zoe",
];
const LAST_NAMES: &[&str] = &[
    "Abe",
    "Bauer",
    "Costa",
    "Dubois",
    "Eze",
    "Fischer",
    "Garcia",
    "Hansen",
    "Ito",
    "Jensen",
    "Khan",
    "Kim",
    "Lopez",
    "Meyer",
    "Nguyen",
    "Novak",
    "Okafor",
    "Park",
    "Rossi",
    "Salihoglu",
    "Silva",
    "Smith",
    "Tanaka",
    "Wang",
    "Yilmaz",
    "Zhang",
];
const WORDS: &[&str] = &[
    "about", "graph", "database", "photo", "trip", "music", "coffee", "great", "news", "today",
    "friends", "city", "really", "what", "think", "nice", "love", "game", "book", "weekend",
];

#[derive(Clone, Debug)]
pub struct SocialParams {
    pub persons: u64,
    /// KNOWS edges per person (average out-degree; total degree is twice).
    pub knows_per_person: u64,
    pub posts_per_person: u64,
    pub comments_per_person: u64,
    pub likes_per_person: u64,
    /// Power-law exponent of the rank weights (degree exponent 1 + 1/beta).
    pub beta: f64,
    pub seed: u64,
}

impl SocialParams {
    pub fn new(persons: u64, seed: u64) -> Self {
        SocialParams {
            persons,
            knows_per_person: 10,
            posts_per_person: 3,
            comments_per_person: 6,
            likes_per_person: 6,
            beta: 0.6,
            seed,
        }
    }
    pub fn knows(&self) -> u64 {
        self.persons * self.knows_per_person
    }
    pub fn posts(&self) -> u64 {
        self.persons * self.posts_per_person
    }
    pub fn comments(&self) -> u64 {
        self.persons * self.comments_per_person
    }
    pub fn likes(&self) -> u64 {
        self.persons * self.likes_per_person
    }
}

/// A bijection of `0..n` (multiplication by a unit modulo n, plus an offset).
#[derive(Clone, Copy, Debug)]
pub struct Perm {
    n: u64,
    mul: u64,
    add: u64,
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

impl Perm {
    pub fn new(n: u64, seed: u64) -> Perm {
        let n = n.max(1);
        let mut mul = (mix(seed, 1) % n) | 1;
        while gcd(mul, n) != 1 {
            mul += 1;
        }
        Perm {
            n,
            mul: mul % n,
            add: mix(seed, 2) % n,
        }
    }
    #[inline]
    pub fn apply(&self, x: u64) -> u64 {
        ((x as u128 * self.mul as u128 + self.add as u128) % self.n as u128) as u64
    }
}

/// Draws ranks in `0..n` with probability ∝ (r+1)^-beta by inverting the
/// continuous CDF.
#[derive(Clone, Copy, Debug)]
pub struct PowerLaw {
    n: u64,
    e: f64,
    span: f64,
}

impl PowerLaw {
    pub fn new(n: u64, beta: f64) -> PowerLaw {
        let e = 1.0 - beta;
        PowerLaw {
            n: n.max(1),
            e,
            span: ((n.max(1) + 1) as f64).powf(e) - 1.0,
        }
    }
    #[inline]
    pub fn sample(&self, rng: &mut Xoshiro256) -> u64 {
        let u = rng.next_f64();
        let x = (1.0 + u * self.span).powf(1.0 / self.e) - 1.0;
        (x as u64).min(self.n - 1)
    }
}

/// Civil date (y, m, d) of a day count since 1970-01-01 (proleptic Gregorian).
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn push_date(out: &mut Vec<u8>, days_since_1970: i64) {
    let (y, m, d) = civil_from_days(days_since_1970);
    push_u64(out, y as u64);
    out.push(b'-');
    push_u64_padded(out, m as u64, 2);
    out.push(b'-');
    push_u64_padded(out, d as u64, 2);
}

/// `YYYY-MM-DD hh:mm:ss` of a Unix time in seconds.
pub fn push_timestamp(out: &mut Vec<u8>, secs: u64) {
    push_date(out, (secs / 86_400) as i64);
    let s = secs % 86_400;
    out.push(b' ');
    push_u64_padded(out, s / 3600, 2);
    out.push(b':');
    push_u64_padded(out, s / 60 % 60, 2);
    out.push(b':');
    push_u64_padded(out, s % 60, 2);
}

/// The generator: parameters plus the samplers derived from them.
pub struct Social {
    pub p: SocialParams,
    person_rank: PowerLaw,
    person_perm: Perm,
    post_rank: PowerLaw,
    post_perm: Perm,
}

fn chunks(total: u64) -> u64 {
    total.div_ceil(CHUNK)
}

fn range(total: u64, chunk: u64) -> std::ops::Range<u64> {
    chunk * CHUNK..((chunk + 1) * CHUNK).min(total)
}

impl Social {
    pub fn new(p: SocialParams) -> Social {
        Social {
            person_rank: PowerLaw::new(p.persons, p.beta),
            person_perm: Perm::new(p.persons, mix(p.seed, TAG_PERSON)),
            post_rank: PowerLaw::new(p.posts(), p.beta),
            post_perm: Perm::new(p.posts(), mix(p.seed, TAG_POST)),
            p,
        }
    }

    fn rng(&self, tag: u64, chunk: u64) -> Xoshiro256 {
        Xoshiro256::seed_from(mix(self.p.seed ^ tag, chunk))
    }

    /// A person drawn with the power-law weights.
    #[inline]
    pub fn person(&self, rng: &mut Xoshiro256) -> u64 {
        self.person_perm.apply(self.person_rank.sample(rng))
    }

    #[inline]
    fn post(&self, rng: &mut Xoshiro256) -> u64 {
        self.post_perm.apply(self.post_rank.sample(rng))
    }

    /// The id of the highest-weight person (the biggest hub).
    pub fn top_person(&self) -> u64 {
        self.person_perm.apply(0)
    }

    /// The id of the most replied-to and liked post.
    pub fn top_post(&self) -> u64 {
        self.post_perm.apply(0)
    }

    /// Creation time of a person (Unix seconds), a pure function of the id.
    pub fn person_created(&self, id: u64) -> u64 {
        EPOCH_2010 + mix(self.p.seed ^ TAG_PERSON, id) % (3 * YEAR_S)
    }

    fn post_created(&self, id: u64) -> u64 {
        EPOCH_2010 + YEAR_S / 2 + mix(self.p.seed ^ TAG_POST, id) % (3 * YEAR_S)
    }

    pub fn person_chunk(&self, chunk: u64, out: &mut Vec<u8>) {
        for id in range(self.p.persons, chunk) {
            let h = mix(self.p.seed ^ TAG_PERSON, !id);
            push_u64(out, id);
            out.push(b',');
            out.extend_from_slice(FIRST_NAMES[(h % FIRST_NAMES.len() as u64) as usize].as_bytes());
            out.push(b',');
            out.extend_from_slice(
                LAST_NAMES[((h >> 16) % LAST_NAMES.len() as u64) as usize].as_bytes(),
            );
            out.extend_from_slice(if (h >> 32) & 1 == 0 {
                b",male,"
            } else {
                b",female,"
            });
            push_date(out, ((h >> 33) % 18_262) as i64 - DAYS_1950_TO_1970);
            out.push(b',');
            push_timestamp(out, self.person_created(id));
            out.push(b'\n');
        }
    }

    /// Calls `f(from, to, rng)` for each KNOWS edge of `chunk`.
    pub fn knows_edges(&self, chunk: u64, f: &mut dyn FnMut(u64, u64, &mut Xoshiro256)) {
        let mut rng = self.rng(TAG_KNOWS, chunk);
        for _ in range(self.p.knows(), chunk) {
            let a = self.person(&mut rng);
            let mut b = self.person(&mut rng);
            while b == a && self.p.persons > 1 {
                b = self.person_perm.apply(rng.below(self.p.persons));
            }
            f(a, b, &mut rng);
        }
    }

    pub fn knows_chunk(&self, chunk: u64, out: &mut Vec<u8>) {
        self.knows_edges(chunk, &mut |a, b, rng| {
            let since = self.person_created(a).max(self.person_created(b));
            push_u64(out, a);
            out.push(b',');
            push_u64(out, b);
            out.push(b',');
            push_timestamp(out, since + rng.below(YEAR_S));
            out.push(b'\n');
        });
    }

    fn push_content(out: &mut Vec<u8>, kind: &str, id: u64, rng: &mut Xoshiro256) {
        let start = out.len();
        out.extend_from_slice(kind.as_bytes());
        out.push(b' ');
        push_u64(out, id);
        for _ in 0..1 + rng.below(12) {
            out.push(b' ');
            out.extend_from_slice(WORDS[rng.below(WORDS.len() as u64) as usize].as_bytes());
        }
        let len = out.len() - start;
        out.push(b',');
        push_u64(out, len as u64);
    }

    /// Post `id`'s creator, calling `f(id, creator, rng)` for each post of
    /// `chunk` (the content is drawn from `rng` afterwards).
    fn posts(&self, chunk: u64, f: &mut dyn FnMut(u64, u64, &mut Xoshiro256)) {
        let mut rng = self.rng(TAG_POST, chunk);
        for id in range(self.p.posts(), chunk) {
            let creator = self.person(&mut rng);
            f(id, creator, &mut rng);
        }
    }

    pub fn post_chunk(&self, chunk: u64, out: &mut Vec<u8>) {
        self.posts(chunk, &mut |id, _creator, rng| {
            push_u64(out, id);
            out.push(b',');
            push_timestamp(out, self.post_created(id));
            out.push(b',');
            Self::push_content(out, "post", id, rng);
            out.push(b'\n');
        });
    }

    pub fn post_creator_chunk(&self, chunk: u64, out: &mut Vec<u8>) {
        self.posts(chunk, &mut |id, creator, _| {
            push_u64(out, id);
            out.push(b',');
            push_u64(out, creator);
            out.push(b'\n');
        });
    }

    /// `f(comment id, post, creator, rng)` for each comment of `chunk`.
    fn comments(&self, chunk: u64, f: &mut dyn FnMut(u64, u64, u64, &mut Xoshiro256)) {
        let mut rng = self.rng(TAG_COMMENT, chunk);
        let first = self.p.posts();
        for i in range(self.p.comments(), chunk) {
            let post = self.post(&mut rng);
            let creator = self.person(&mut rng);
            f(first + i, post, creator, &mut rng);
        }
    }

    pub fn comment_chunk(&self, chunk: u64, out: &mut Vec<u8>) {
        self.comments(chunk, &mut |id, post, _, rng| {
            push_u64(out, id);
            out.push(b',');
            push_timestamp(out, self.post_created(post) + rng.below(30 * 86_400));
            out.push(b',');
            Self::push_content(out, "comment", id, rng);
            out.push(b'\n');
        });
    }

    pub fn comment_rel_chunk(&self, chunk: u64, reply_of: bool, out: &mut Vec<u8>) {
        self.comments(chunk, &mut |id, post, creator, _| {
            push_u64(out, id);
            out.push(b',');
            push_u64(out, if reply_of { post } else { creator });
            out.push(b'\n');
        });
    }

    pub fn likes_chunk(&self, chunk: u64, out: &mut Vec<u8>) {
        let mut rng = self.rng(TAG_LIKES, chunk);
        for _ in range(self.p.likes(), chunk) {
            let person = self.person(&mut rng);
            let post = self.post(&mut rng);
            push_u64(out, person);
            out.push(b',');
            push_u64(out, post);
            out.push(b',');
            push_timestamp(out, self.post_created(post) + rng.below(60 * 86_400));
            out.push(b'\n');
        }
    }

    pub fn meta(&self) -> Vec<(String, Json)> {
        let p = &self.p;
        let int = |v: u64| Json::Int(v as i64);
        vec![
            ("generator".into(), Json::str("social")),
            ("persons".into(), int(p.persons)),
            ("knows_per_person".into(), int(p.knows_per_person)),
            ("posts_per_person".into(), int(p.posts_per_person)),
            ("comments_per_person".into(), int(p.comments_per_person)),
            ("likes_per_person".into(), int(p.likes_per_person)),
            ("beta".into(), Json::Float(p.beta)),
            ("seed".into(), int(p.seed)),
        ]
    }
}

/// Writes every file of the social network into `dir`.
pub fn generate(dir: &Path, s: &Social, threads: usize) -> io::Result<GenSummary> {
    std::fs::create_dir_all(dir)?;
    let t0 = Instant::now();
    let p = &s.p;
    let mut bytes = 0;
    bytes += write_chunked(
        &dir.join("person.csv"),
        "id,firstName,lastName,gender,birthday,creationDate\n",
        chunks(p.persons),
        threads,
        |i, out| s.person_chunk(i, out),
    )?;
    bytes += write_chunked(
        &dir.join("knows.csv"),
        "from,to,creationDate\n",
        chunks(p.knows()),
        threads,
        |i, out| s.knows_chunk(i, out),
    )?;
    bytes += write_chunked(
        &dir.join("post.csv"),
        "id,creationDate,content,length\n",
        chunks(p.posts()),
        threads,
        |i, out| s.post_chunk(i, out),
    )?;
    bytes += write_chunked(
        &dir.join("post_hascreator.csv"),
        "from,to\n",
        chunks(p.posts()),
        threads,
        |i, out| s.post_creator_chunk(i, out),
    )?;
    bytes += write_chunked(
        &dir.join("comment.csv"),
        "id,creationDate,content,length\n",
        chunks(p.comments()),
        threads,
        |i, out| s.comment_chunk(i, out),
    )?;
    bytes += write_chunked(
        &dir.join("comment_hascreator.csv"),
        "from,to\n",
        chunks(p.comments()),
        threads,
        |i, out| s.comment_rel_chunk(i, false, out),
    )?;
    bytes += write_chunked(
        &dir.join("comment_replyof.csv"),
        "from,to\n",
        chunks(p.comments()),
        threads,
        |i, out| s.comment_rel_chunk(i, true, out),
    )?;
    bytes += write_chunked(
        &dir.join("likes.csv"),
        "from,to,creationDate\n",
        chunks(p.likes()),
        threads,
        |i, out| s.likes_chunk(i, out),
    )?;
    let seconds = t0.elapsed().as_secs_f64();
    let nodes = p.persons + p.posts() + p.comments();
    let edges = p.knows() + p.posts() + 2 * p.comments() + p.likes();
    let mut m = s.meta();
    m.push(("nodes".into(), Json::Int(nodes as i64)));
    m.push(("edges".into(), Json::Int(edges as i64)));
    m.push(("knows".into(), Json::Int(p.knows() as i64)));
    m.push(("posts".into(), Json::Int(p.posts() as i64)));
    m.push(("comments".into(), Json::Int(p.comments() as i64)));
    m.push(("likes".into(), Json::Int(p.likes() as i64)));
    m.push(("bytes".into(), Json::Int(bytes as i64)));
    m.push(("gen_threads".into(), Json::Int(threads as i64)));
    m.push(("gen_seconds".into(), Json::Float(seconds)));
    m.push((
        "params".into(),
        Json::Obj(vec![
            ("PERSON".into(), Json::Int(s.top_person() as i64)),
            ("POST".into(), Json::Int(s.top_post() as i64)),
            ("COMMENT".into(), Json::Int(p.posts() as i64)),
        ]),
    ));
    std::fs::write(dir.join("meta.json"), format!("{}\n", Json::Obj(m)))?;
    Ok(GenSummary {
        nodes,
        edges,
        bytes,
        seconds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(dir: &Path, f: &str) -> Vec<String> {
        std::fs::read_to_string(dir.join(f))
            .unwrap()
            .lines()
            .map(String::from)
            .collect()
    }

    #[test]
    fn dates_and_timestamps() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(-DAYS_1950_TO_1970), (1950, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        let mut v = Vec::new();
        push_timestamp(&mut v, EPOCH_2010 + 3661);
        assert_eq!(String::from_utf8(v).unwrap(), "2010-01-01 01:01:01");
    }

    #[test]
    fn perm_is_a_bijection() {
        for n in [1u64, 2, 10, 97, 1000] {
            let p = Perm::new(n, 7);
            let mut seen: Vec<u64> = (0..n).map(|x| p.apply(x)).collect();
            seen.sort();
            assert_eq!(seen, (0..n).collect::<Vec<_>>());
        }
    }

    #[test]
    fn deterministic_counts_and_skew() {
        let base =
            std::env::temp_dir().join(format!("kith-bench-social-test-{}", std::process::id()));
        let (d1, d2) = (base.join("a"), base.join("b"));
        let p = SocialParams::new(20_000, 9);
        let s = Social::new(p.clone());
        let sum = generate(&d1, &s, 1).unwrap();
        generate(&d2, &Social::new(p.clone()), 3).unwrap();
        for f in [
            "person.csv",
            "knows.csv",
            "post.csv",
            "comment.csv",
            "post_hascreator.csv",
            "comment_hascreator.csv",
            "comment_replyof.csv",
            "likes.csv",
        ] {
            assert_eq!(
                std::fs::read(d1.join(f)).unwrap(),
                std::fs::read(d2.join(f)).unwrap(),
                "{f}"
            );
        }
        // A different seed gives different data.
        let d3 = base.join("c");
        generate(&d3, &Social::new(SocialParams::new(20_000, 10)), 2).unwrap();
        assert_ne!(
            std::fs::read(d1.join("knows.csv")).unwrap(),
            std::fs::read(d3.join("knows.csv")).unwrap()
        );

        let persons = lines(&d1, "person.csv");
        assert_eq!(persons.len() as u64, p.persons + 1);
        assert_eq!(
            persons[0],
            "id,firstName,lastName,gender,birthday,creationDate"
        );
        assert_eq!(persons[1].split(',').count(), 6);
        let knows = lines(&d1, "knows.csv");
        assert_eq!(knows.len() as u64, p.knows() + 1);
        assert_eq!(lines(&d1, "post.csv").len() as u64, p.posts() + 1);
        assert_eq!(lines(&d1, "comment.csv").len() as u64, p.comments() + 1);
        assert_eq!(lines(&d1, "likes.csv").len() as u64, p.likes() + 1);
        assert_eq!(sum.nodes, p.persons + p.posts() + p.comments());

        // Degrees: no self loops, heavy tail, the top person is the hub.
        let mut deg = vec![0u64; p.persons as usize];
        for l in &knows[1..] {
            let mut it = l.split(',');
            let a: usize = it.next().unwrap().parse().unwrap();
            let b: usize = it.next().unwrap().parse().unwrap();
            assert_ne!(a, b);
            deg[a] += 1;
            deg[b] += 1;
        }
        let mean = 2.0 * p.knows() as f64 / p.persons as f64;
        let max = *deg.iter().max().unwrap();
        assert_eq!(deg[s.top_person() as usize], max);
        assert!(max as f64 > 20.0 * mean, "max degree {max}, mean {mean}");
        let mut sorted = deg.clone();
        sorted.sort_unstable_by(|a, b| b.cmp(a));
        let top1: u64 = sorted[..sorted.len() / 100].iter().sum();
        let share = top1 as f64 / (2 * p.knows()) as f64;
        assert!(share > 0.1, "top 1% hold {share:.3} of endpoints");
        // Comment ids follow post ids; contents' lengths are right.
        let c = lines(&d1, "comment.csv");
        assert!(c[1].starts_with(&format!("{},", p.posts())));
        let f: Vec<&str> = c[1].split(',').collect();
        assert_eq!(f[2].len().to_string(), f[3]);
        let _ = std::fs::remove_dir_all(&base);
    }
}
