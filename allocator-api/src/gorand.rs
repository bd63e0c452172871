//! Go's `math/rand` stream, for reproducing programs that draw from it.
//!
//! The FGD artifact (reference `fgd-packing-experiment.md` §1.2) draws its arrival order,
//! resampling, node order and `Random`'s choices from Go's global `math/rand` source seeded
//! with `rand.Seed(seed)`: before Go 1.20 (and with `rand.Seed` after it) that is the
//! additive lagged Fibonacci generator Go documents in `math/rand/rng.go`: 607 words of
//! state, tap 273, `x[n] = x[n−607] + x[n−273]` (mod 2^64), seeded by an LCG
//! (`x·48271 mod (2^31 − 1)`) whose values are XORed with a fixed table. The table
//! ([`gorand_table`](self)) is read back from Go's own state by `tools/gorand` (see there),
//! not recomputed. On top of the source, [`GoRand`] offers the methods of Go's `*rand.Rand`
//! with their exact algorithms (the number of values each consumes matters to anyone who
//! draws after it): `Int63`, `Int31`, `Uint32`, `Int`, `Int31n`, `Intn`, `Int63n`, `Perm`,
//! `Shuffle`.

use crate::gorand_table::COOKED;

const LEN: usize = 607;
const TAP: usize = 273;
const INT32_MAX: i64 = (1 << 31) - 1;

/// Go's `math/rand` generator (`rngSource` behind a `*rand.Rand`).
#[derive(Clone)]
pub struct GoRand {
    vec: Box<[i64; LEN]>,
    tap: usize,
    feed: usize,
    draws: u64,
}

impl std::fmt::Debug for GoRand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GoRand {{ draws: {} }}", self.draws)
    }
}

/// One step of the seeding LCG, x·48271 mod (2^31 − 1) (Schrage's method, as Go computes it).
fn lcg(x: i32) -> i32 {
    const A: i32 = 48271;
    const Q: i32 = 44488;
    const R: i32 = 3399;
    let (hi, lo) = (x / Q, x % Q);
    let mut x = A.wrapping_mul(lo).wrapping_sub(R.wrapping_mul(hi));
    if x < 0 {
        x = x.wrapping_add(INT32_MAX as i32);
    }
    x
}

impl GoRand {
    /// A generator seeded as Go's `rand.NewSource(seed)` / `rand.Seed(seed)` seeds it.
    pub fn new(seed: i64) -> GoRand {
        let mut seed = seed % INT32_MAX;
        if seed < 0 {
            seed += INT32_MAX;
        }
        if seed == 0 {
            seed = 89_482_311;
        }
        let mut x = seed as i32;
        let mut vec = Box::new([0i64; LEN]);
        for i in -20..LEN as i64 {
            x = lcg(x);
            if i >= 0 {
                let mut u = i64::from(x) << 40;
                x = lcg(x);
                u ^= i64::from(x) << 20;
                x = lcg(x);
                u ^= i64::from(x);
                vec[i as usize] = u ^ COOKED[i as usize] as i64;
            }
        }
        GoRand { vec, tap: 0, feed: LEN - TAP, draws: 0 }
    }

    /// A generator seeded with `seed` that has already produced `draws` values.
    pub fn skipped(seed: i64, draws: u64) -> GoRand {
        let mut r = GoRand::new(seed);
        for _ in 0..draws {
            r.uint64();
        }
        r
    }

    /// How many 64-bit values the source has produced (each method below consumes one or
    /// more).
    pub fn draws(&self) -> u64 {
        self.draws
    }

    /// The source's next 64 bits (`Uint64`).
    pub fn uint64(&mut self) -> u64 {
        self.tap = if self.tap == 0 { LEN - 1 } else { self.tap - 1 };
        self.feed = if self.feed == 0 { LEN - 1 } else { self.feed - 1 };
        let x = self.vec[self.feed].wrapping_add(self.vec[self.tap]);
        self.vec[self.feed] = x;
        self.draws += 1;
        x as u64
    }

    /// `Int63`: a non-negative 63-bit value.
    pub fn int63(&mut self) -> i64 {
        (self.uint64() & ((1u64 << 63) - 1)) as i64
    }

    /// `Float64`: an `Int63` over 2^63, redrawn in the (rare) case it rounds to 1.
    pub fn float64(&mut self) -> f64 {
        loop {
            let f = self.int63() as f64 / (1u64 << 63) as f64;
            if f < 1.0 {
                return f;
            }
        }
    }

    /// `Int31`: the top 31 bits of an `Int63`.
    pub fn int31(&mut self) -> i32 {
        (self.int63() >> 32) as i32
    }

    /// `Uint32`: the top 32 bits of an `Int63`.
    pub fn uint32(&mut self) -> u32 {
        (self.int63() >> 31) as u32
    }

    /// `Int` on a 64-bit platform: an `Int63`.
    pub fn int(&mut self) -> i64 {
        self.int63()
    }

    /// `Int63n(n)`, n > 0: uniform in [0, n), by rejection.
    pub fn int63n(&mut self, n: i64) -> i64 {
        assert!(n > 0, "Int63n: n must be positive");
        if n & (n - 1) == 0 {
            return self.int63() & (n - 1);
        }
        let max = ((1u64 << 63) - 1 - (1u64 << 63) % n as u64) as i64;
        let mut v = self.int63();
        while v > max {
            v = self.int63();
        }
        v % n
    }

    /// `Int31n(n)`, n > 0: uniform in [0, n), by rejection.
    pub fn int31n(&mut self, n: i32) -> i32 {
        assert!(n > 0, "Int31n: n must be positive");
        if n & (n - 1) == 0 {
            return self.int31() & (n - 1);
        }
        let max = ((1u32 << 31) - 1 - (1u32 << 31) % n as u32) as i32;
        let mut v = self.int31();
        while v > max {
            v = self.int31();
        }
        v % n
    }

    /// `Intn(n)`, n > 0: `Int31n` when n fits in 31 bits, else `Int63n`.
    pub fn intn(&mut self, n: usize) -> usize {
        assert!(n > 0, "Intn: n must be positive");
        if n <= INT32_MAX as usize {
            self.int31n(n as i32) as usize
        } else {
            self.int63n(n as i64) as usize
        }
    }

    /// The unexported `int31n(n)` that `Shuffle` uses: Lemire's multiply-and-reject.
    fn int31n_lemire(&mut self, n: i32) -> i32 {
        let n = n as u32;
        let mut v = self.uint32();
        let mut prod = u64::from(v) * u64::from(n);
        let mut low = prod as u32;
        if low < n {
            let thresh = n.wrapping_neg() % n;
            while low < thresh {
                v = self.uint32();
                prod = u64::from(v) * u64::from(n);
                low = prod as u32;
            }
        }
        (prod >> 32) as i32
    }

    /// `Perm(n)`: a random permutation of 0..n, built as Go builds it (one `Intn(i + 1)` per
    /// element, `Intn(1)` included).
    pub fn perm(&mut self, n: usize) -> Vec<usize> {
        let mut m = vec![0usize; n];
        for i in 0..n {
            let j = self.intn(i + 1);
            m[i] = m[j];
            m[j] = i;
        }
        m
    }

    /// `Shuffle` of `items`: from the last index down to 1, swap with `int31n(i + 1)` (with
    /// `Int63n` for indices past 2^31 − 2).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        let mut i = items.len();
        while i > 1 {
            i -= 1;
            let j = if i as u64 >= INT32_MAX as u64 {
                self.int63n(i as i64 + 1) as usize
            } else {
                self.int31n_lemire(i as i32 + 1) as usize
            };
            items.swap(i, j);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gorand_table::*;

    #[test]
    fn matches_go_for_seed_42() {
        let mut r = GoRand::new(42);
        assert_eq!([r.int63(), r.int63(), r.int63()], GO_INT63_42);
        let intn: Vec<i64> = (0..3).map(|_| r.intn(10) as i64).collect();
        assert_eq!(intn, GO_INTN10_42);
        assert_eq!(r.intn(1_000_003) as i64, GO_INTN_BIG_42);
        assert_eq!(r.perm(8), GO_PERM8_42);
        let mut s: Vec<usize> = (0..10).collect();
        r.shuffle(&mut s);
        assert_eq!(s, GO_SHUFFLE10_42);
        assert_eq!(r.int63(), GO_NEXT_42);
    }

    #[test]
    fn skipping_continues_the_stream() {
        let mut a = GoRand::new(7);
        a.perm(20);
        let n = a.draws();
        let mut b = GoRand::skipped(7, n);
        assert_eq!(a.int63(), b.int63());
    }

    #[test]
    fn seeds_reduce_modulo_2_31_minus_1() {
        assert_eq!(GoRand::new(0).int63(), GoRand::new(89_482_311).int63());
        assert_eq!(GoRand::new(5).int63(), GoRand::new(5 + INT32_MAX).int63());
    }
}
