//! A mesh's matrix: one figure per ordered (client, server) pair, the median over that
//! pair's completed tests (repetitions, rounds, and the plan's tests that have the figure).
//! Throughput is the receivers' (all directions summed, bit/s), round-trip times the
//! client's (ns), as [`crate::compare::values`] defines them.

use wirebench_model::compare::Figure;
use wirebench_model::mesh::MeshResult;
use wirebench_stats::hypothesis::median;

/// The matrix of `figure`: `cells[client][server]` indexed as the mesh's `hosts`, `None`
/// where the pair has no completed test with the figure (a host down, or not in the plan).
#[derive(Debug, Clone, PartialEq)]
pub struct Matrix {
    /// The figure.
    pub figure: Figure,
    /// Per client host, per server host: the median, and how many tests it is over.
    pub cells: Vec<Vec<Option<(f64, usize)>>>,
}

impl Matrix {
    /// Whether no pair has the figure.
    pub fn is_empty(&self) -> bool {
        self.cells.iter().flatten().all(Option::is_none)
    }
}

/// The matrix of `figure` over `m`'s tests.
pub fn matrix(m: &MeshResult, figure: Figure) -> Matrix {
    let n = m.hosts.len();
    let mut vals: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); n]; n];
    let index = |h: &str| m.hosts.iter().position(|x| x == h);
    for t in &m.tests {
        let (Some(c), Some(s)) = (index(&t.client), index(&t.server)) else {
            continue;
        };
        let got = crate::compare::values(std::slice::from_ref(&t.result))
            .into_iter()
            .find(|(f, _)| *f == figure)
            .map(|(_, v)| v.runs)
            .unwrap_or_default();
        if !got.is_empty() {
            vals[c][s].push(median(&got));
        }
    }
    Matrix {
        figure,
        cells: vals
            .into_iter()
            .map(|row| {
                row.into_iter()
                    .map(|v| (!v.is_empty()).then(|| (median(&v), v.len())))
                    .collect()
            })
            .collect(),
    }
}
