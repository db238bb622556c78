//! What sccache says about the farm (`--dist-status`) and about its own compiles
//! (`--show-stats --stats-format=json`).

use std::collections::BTreeMap;
use std::process::Stdio;

use crate::compile::launcher::farm::server::Server;

/// The scheduler's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SchedulerStatus {
    pub url: String,
    pub servers: u64,
    pub cpus: u64,
}

/// Parses `sccache --dist-status`: `{"SchedulerStatus":[url,{"num_servers":..,"num_cpus":..}]}`
/// when the scheduler answers; anything else is the reason it does not.
pub(crate) fn parse_status(text: &str) -> Result<SchedulerStatus, String> {
    let value: serde_json::Value = serde_json::from_str(text.trim())
        .map_err(|_| format!("sccache --dist-status said: {}", text.trim()))?;
    let Some([url, info]) = value
        .get("SchedulerStatus")
        .and_then(|s| s.as_array())
        .map(|a| a.as_slice())
        .and_then(|a| <&[serde_json::Value; 2]>::try_from(a).ok())
    else {
        return Err(format!("sccache --dist-status said: {}", text.trim()));
    };
    let number = |name: &str| info.get(name).and_then(|v| v.as_u64());
    match (url.as_str(), number("num_servers"), number("num_cpus")) {
        (Some(url), Some(servers), Some(cpus)) => Ok(SchedulerStatus {
            url: url.to_string(),
            servers,
            cpus,
        }),
        _ => Err(format!("sccache --dist-status said: {}", text.trim())),
    }
}

/// `sccache --dist-status` through `server`: the scheduler's answer, or why there is none.
pub(crate) fn ask(server: &Server) -> Result<SchedulerStatus, String> {
    let out = server
        .client()
        .arg("--dist-status")
        .stderr(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run sccache: {e}"))?;
    parse_status(&String::from_utf8_lossy(&out.stdout))
}

/// sccache's counters: its cache's answers, and distributed and local compiles.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SccacheStats {
    pub cache_hits: u64,
    pub cache_misses: u64,
    /// Its cache is not on this machine's disk (Redis, WebDAV, S3, ...): every hit is remote.
    pub remote: bool,
    pub compilations: u64,
    pub dist_compiles: BTreeMap<String, u64>,
    pub dist_errors: u64,
}

impl SccacheStats {
    /// Parses `sccache --show-stats --stats-format=json`.
    pub(crate) fn parse(text: &str) -> Option<SccacheStats> {
        let value: serde_json::Value = serde_json::from_str(text).ok()?;
        let stats = value.get("stats")?;
        let counts = |name: &str| -> Option<u64> {
            Some(
                stats
                    .get(name)?
                    .get("counts")?
                    .as_object()?
                    .values()
                    .filter_map(|v| v.as_u64())
                    .sum(),
            )
        };
        let location = value.get("cache_location").and_then(|l| l.as_str());
        Some(SccacheStats {
            cache_hits: counts("cache_hits")?,
            cache_misses: counts("cache_misses").unwrap_or(0),
            remote: location.is_some_and(|l| !l.starts_with("Local disk")),
            compilations: stats.get("compilations")?.as_u64()?,
            dist_compiles: stats
                .get("dist_compiles")?
                .as_object()?
                .iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_u64()?)))
                .collect(),
            dist_errors: stats.get("dist_errors")?.as_u64()?,
        })
    }

    /// Reads them from `server` (`--show-stats`).
    pub(crate) fn read(server: &Server) -> Option<SccacheStats> {
        let out = server
            .client()
            .args(["--show-stats", "--stats-format=json"])
            .stderr(Stdio::null())
            .output()
            .ok()?;
        SccacheStats::parse(&String::from_utf8_lossy(&out.stdout))
    }

    /// What the farm did between `self` and `later`.
    pub(crate) fn since(&self, later: &SccacheStats) -> ElsewhereReport {
        let mut servers = 0;
        let mut distributed = 0;
        for (server, &count) in &later.dist_compiles {
            let delta = count.saturating_sub(self.dist_compiles.get(server).copied().unwrap_or(0));
            if delta > 0 {
                servers += 1;
                distributed += delta;
            }
        }
        let compiled = later.compilations.saturating_sub(self.compilations);
        ElsewhereReport {
            cache_hits: later.cache_hits.saturating_sub(self.cache_hits),
            distributed,
            servers,
            local: compiled.saturating_sub(distributed),
            infrastructure_errors: later.dist_errors.saturating_sub(self.dist_errors),
        }
    }
}

/// What a launcher that sends compiles elsewhere (the compile farm: sccache-dist) did for a
/// build.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ElsewhereReport {
    /// Compiles sccache's own cache answered (neither distributed nor compiled locally).
    pub cache_hits: u64,
    /// Compiles run on a build server.
    pub distributed: u64,
    /// Build servers that ran at least one.
    pub servers: u64,
    /// Compiles sccache ran locally (not distributable, or retried after a server failed).
    pub local: u64,
    /// Distributed compiles that failed for infrastructure reasons (retried locally).
    pub infrastructure_errors: u64,
}
