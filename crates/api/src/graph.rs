//! The memory graph: memories, the index, CLAUDE.md files and rules as nodes; `[[links]]`,
//! index pointers and `@include`s as edges; links that resolve to nothing become ghost nodes
//! so the user can see what is missing.

use crate::{ApiError, ContextRequest, Mneme};
use mneme_core::{Layer, MemoryType};
use mneme_store::memdir::{Scope, INDEX_FILE};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub enum NodeKind {
    Memory,
    Index,
    ClaudeMd,
    Rule,
    /// A `[[link]]` or index target that matches no file.
    Ghost,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub enum EdgeKind {
    Link,
    IndexPointer,
    Include,
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct GraphNode {
    pub id: String,
    pub kind: NodeKind,
    pub label: String,
    pub path: Option<PathBuf>,
    pub memory_type: Option<MemoryType>,
    pub scope: Option<Scope>,
    pub layer: Option<Layer>,
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct GraphEdge {
    pub source: String,
    pub target: String,
    pub kind: EdgeKind,
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct Graph {
    pub nodes: Vec<GraphNode>,
    pub edges: Vec<GraphEdge>,
}

impl Graph {
    fn node(&mut self, seen: &mut HashMap<String, usize>, n: GraphNode) -> String {
        let id = n.id.clone();
        if !seen.contains_key(&id) {
            seen.insert(id.clone(), self.nodes.len());
            self.nodes.push(n);
        }
        id
    }

    fn ghost(&mut self, seen: &mut HashMap<String, usize>, name: &str) -> String {
        self.node(
            seen,
            GraphNode {
                id: format!("ghost:{name}"),
                kind: NodeKind::Ghost,
                label: name.to_string(),
                path: None,
                memory_type: None,
                scope: None,
                layer: None,
            },
        )
    }
}

impl Mneme {
    /// The graph of everything that shapes Claude Code's memory from `req.cwd`.
    pub fn graph(&self, req: &ContextRequest) -> Result<Graph, ApiError> {
        let (r, m) = self.memdir(req)?;
        let mut g = Graph { nodes: Vec::new(), edges: Vec::new() };
        let mut seen = HashMap::new();

        // CLAUDE.md files and rules, with their includes.
        let ctx = mneme_claudemd::load(&r.options);
        for f in &ctx.files {
            if matches!(f.layer, Layer::AutoMem | Layer::TeamMem) {
                continue;
            }
            let id = g.node(
                &mut seen,
                GraphNode {
                    id: format!("file:{}", f.path.display()),
                    kind: if f.is_rule { NodeKind::Rule } else { NodeKind::ClaudeMd },
                    label: f.path.file_name().map(|n| n.to_string_lossy().to_string()).unwrap_or_default(),
                    path: Some(f.path.clone()),
                    memory_type: None,
                    scope: None,
                    layer: Some(f.layer),
                },
            );
            if let Some(parent) = &f.parent {
                g.edges.push(GraphEdge { source: format!("file:{}", parent.display()), target: id, kind: EdgeKind::Include });
            }
        }

        // Memories, keyed by relative path; links resolve by `name:` then by file stem.
        let scan = m.scan()?;
        let mut by_name: BTreeMap<String, String> = BTreeMap::new();
        for f in &scan.files {
            let id = g.node(
                &mut seen,
                GraphNode {
                    id: format!("memory:{}", f.rel_path),
                    kind: NodeKind::Memory,
                    label: f.display_name().to_string(),
                    path: Some(f.abs_path.clone()),
                    memory_type: f.memory_type,
                    scope: Some(f.scope),
                    layer: None,
                },
            );
            by_name.entry(f.stem().to_string()).or_insert_with(|| id.clone());
            if let Some(n) = &f.name {
                by_name.insert(n.clone(), id);
            }
        }
        for f in &scan.files {
            for link in &f.links {
                let target = match by_name.get(link) {
                    Some(t) => t.clone(),
                    None => g.ghost(&mut seen, link),
                };
                g.edges.push(GraphEdge { source: format!("memory:{}", f.rel_path), target, kind: EdgeKind::Link });
            }
        }

        // The indexes and what they point at.
        for scope in [Scope::Private, Scope::Team] {
            let Ok(index) = m.read_index(scope) else { continue };
            if !index.revision.exists() {
                continue;
            }
            let index_id = g.node(
                &mut seen,
                GraphNode {
                    id: format!("index:{}", index.rel_path),
                    kind: NodeKind::Index,
                    label: if scope == Scope::Team { format!("team/{INDEX_FILE}") } else { INDEX_FILE.to_string() },
                    path: Some(m.root().join(&index.rel_path)),
                    memory_type: None,
                    scope: Some(scope),
                    layer: Some(if scope == Scope::Team { Layer::TeamMem } else { Layer::AutoMem }),
                },
            );
            for line in &index.lines {
                let Some(entry) = &line.entry else { continue };
                let memory_id = format!("memory:{}", entry.rel_path);
                let target =
                    if seen.contains_key(&memory_id) { memory_id } else { g.ghost(&mut seen, &entry.rel_path) };
                g.edges.push(GraphEdge { source: index_id.clone(), target, kind: EdgeKind::IndexPointer });
            }
        }
        Ok(g)
    }
}
