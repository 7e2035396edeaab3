//! The round-robin tournament (the circle method): N hosts, every unordered pair exactly
//! once in N−1 rounds (N even) or N rounds (N odd, one host sitting out each round), each
//! round a set of disjoint pairs. Both directions of every pair give 2(N−1) rounds of
//! ordered pairs.

/// The rounds of a single round-robin over `n` hosts: each round's unordered pairs
/// (lower index first), disjoint within the round.
pub fn single_rounds(n: usize) -> Vec<Vec<(usize, usize)>> {
    if n < 2 {
        return vec![];
    }
    // An odd count gets a phantom host `n`; its partner sits the round out.
    let m = if n.is_multiple_of(2) { n } else { n + 1 };
    let mut rounds = Vec::with_capacity(m - 1);
    for r in 0..m - 1 {
        let mut round = Vec::with_capacity(m / 2);
        for i in 0..m / 2 {
            // Host m−1 stays put; the others rotate by one position per round.
            let a = if i == 0 { m - 1 } else { (r + i) % (m - 1) };
            let b = (r + m - 1 - i) % (m - 1);
            if a < n && b < n {
                round.push((a.min(b), a.max(b)));
            }
        }
        rounds.push(round);
    }
    rounds
}

/// Both directions of every pair: the single round-robin's rounds with each pair
/// a→b, then the same rounds with b→a. Every ordered pair exactly once, each round a
/// set of disjoint pairs.
pub fn ordered_rounds(n: usize) -> Vec<Vec<(usize, usize)>> {
    let single = single_rounds(n);
    let back: Vec<Vec<(usize, usize)>> = single
        .iter()
        .map(|r| r.iter().map(|&(a, b)| (b, a)).collect())
        .collect();
    single.into_iter().chain(back).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    fn check(n: usize) {
        let rounds = ordered_rounds(n);
        let want_rounds = if n < 2 {
            0
        } else if n.is_multiple_of(2) {
            2 * (n - 1)
        } else {
            2 * n
        };
        assert_eq!(rounds.len(), want_rounds, "n={n}");
        let mut seen = HashSet::new();
        for r in &rounds {
            let mut busy = HashSet::new();
            for &(a, b) in r {
                assert_ne!(a, b);
                assert!(
                    busy.insert(a) && busy.insert(b),
                    "n={n}: a host twice in a round"
                );
                assert!(seen.insert((a, b)), "n={n}: ({a},{b}) twice");
            }
        }
        assert_eq!(
            seen.len(),
            n * n.saturating_sub(1),
            "n={n}: every ordered pair"
        );
    }

    #[test]
    fn every_ordered_pair_once_in_disjoint_rounds() {
        for n in 0..=33 {
            check(n);
        }
        check(1000);
    }
}
