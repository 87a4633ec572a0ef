//! The task list behind the `TaskCreate`, `TaskGet`, `TaskList` and
//! `TaskUpdate` tools (AgentScope's task tools, spec §7).
//!
//! The list lives in the agent state as JSON under the key [`STATE_KEY`]
//! (`tasks`): an array of [`Task`] objects in creation order. Everything here
//! is pure: [`Tasks`] is parsed from and serialised to that JSON text, and
//! its methods implement the four tools' behaviour and exact output texts.
//! With the `guest` feature, [`store`] loads and saves the list through the
//! guest SDK's `state` interface.
//!
//! The reference behaviour is followed exactly (id allocation, output
//! formats, field order of updates, the completion hint), with these
//! deliberate deviations, all refused with a `TaskUpdateError: …` and
//! leaving the list unchanged (an update is all or nothing):
//!
//! - `add_blocks` / `add_blocked_by` naming a task that does not exist
//!   (AgentScope silently drops such ids);
//! - a task listed as blocking or blocked by itself;
//! - a new dependency that would close a cycle (`1 → 2 → 1`);
//! - moving a task to `in_progress` or `completed` while a task blocking it
//!   is not completed (AgentScope has no transition rules). Every other
//!   transition is allowed, including reopening (`completed` → `pending` or
//!   `in_progress`), and `deleted` always works.

pub mod pyrepr;
pub mod time;

#[cfg(feature = "guest")]
pub mod store;

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The state key the task list is stored under.
pub const STATE_KEY: &str = "tasks";

/// The hint appended to every TaskUpdate answer that leaves the task completed.
pub const COMPLETED_HINT: &str =
    "\n\nTask completed. Call TaskList now to find your next available task or see if your work unblocked others.";

/// Where a task stands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskState {
    /// Not started (the initial state).
    #[default]
    Pending,
    /// Being worked on.
    InProgress,
    /// Done.
    Completed,
}

impl TaskState {
    /// The wire spelling (`pending`, `in_progress`, `completed`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::InProgress => "in_progress",
            Self::Completed => "completed",
        }
    }
}

impl fmt::Display for TaskState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One task, as stored in the agent state (fields in AgentScope's order).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Task {
    /// A short title.
    pub subject: String,
    /// What needs to be done.
    pub description: String,
    /// Free-form key-value data.
    #[serde(default)]
    pub metadata: Map<String, Value>,
    /// When the task was created: ISO 8601 in UTC (see [`time`]).
    #[serde(default)]
    pub created_at: String,
    /// Where the task stands.
    #[serde(default)]
    pub state: TaskState,
    /// The task's id: a decimal integer as a string (`"1"`, `"2"`, …).
    pub id: String,
    /// Who works on it, if anyone.
    #[serde(default)]
    pub owner: Option<String>,
    /// Ids of the tasks this one blocks.
    #[serde(default)]
    pub blocks: Vec<String>,
    /// Ids of the tasks that block this one.
    #[serde(default)]
    pub blocked_by: Vec<String>,
}

/// The input of `TaskCreate`.
#[derive(Debug, Clone, Deserialize)]
pub struct CreateInput {
    /// A short title.
    pub subject: String,
    /// What needs to be done.
    pub description: String,
    /// Free-form key-value data (`null` or absent: none).
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
}

/// The input of `TaskGet`.
#[derive(Debug, Clone, Deserialize)]
pub struct GetInput {
    /// The id of the task to show.
    pub task_id: String,
}

/// The input of `TaskList` (no fields; extra fields are ignored).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct ListInput {}

/// What `TaskUpdate`'s `status` may say: a state, or `deleted`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StatusCommand {
    /// Set the state to `pending`.
    Pending,
    /// Set the state to `in_progress`.
    InProgress,
    /// Set the state to `completed`.
    Completed,
    /// Remove the task (and every reference to it).
    Deleted,
}

/// The input of `TaskUpdate`; every field but `task_id` may be absent or
/// `null`, meaning "leave as it is".
#[derive(Debug, Clone, Default, Deserialize)]
pub struct UpdateInput {
    /// The task to update.
    pub task_id: String,
    /// A new title (an empty string is ignored, as in AgentScope).
    #[serde(default)]
    pub subject: Option<String>,
    /// A new description (an empty string is applied).
    #[serde(default)]
    pub description: Option<String>,
    /// Ids of tasks this task (also) blocks.
    #[serde(default)]
    pub add_blocks: Option<Vec<String>>,
    /// A new state, or `deleted`.
    #[serde(default)]
    pub status: Option<StatusCommand>,
    /// Ids of tasks that (also) block this task.
    #[serde(default)]
    pub add_blocked_by: Option<Vec<String>>,
    /// A new owner.
    #[serde(default)]
    pub owner: Option<String>,
    /// Keys to merge into the metadata; a `null` value deletes the key.
    #[serde(default)]
    pub metadata: Option<Map<String, Value>>,
}

/// Why a task operation failed. `Display` is the exact text the tool sends
/// as its error result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TaskError {
    /// `TaskGet` of an unknown id: `Task not found` (AgentScope's text).
    NotFound,
    /// `TaskUpdate` of an unknown id (AgentScope's text).
    UpdateNotFound {
        /// The id asked for.
        id: String,
    },
    /// `add_blocks` / `add_blocked_by` named tasks that do not exist.
    UnknownIds {
        /// The task being updated.
        task: String,
        /// `add_blocks` or `add_blocked_by`.
        field: &'static str,
        /// The ids that do not exist, in input order.
        ids: Vec<String>,
    },
    /// `add_blocks` / `add_blocked_by` named the task itself.
    SelfReference {
        /// The task being updated.
        task: String,
        /// `add_blocks` or `add_blocked_by`.
        field: &'static str,
    },
    /// A new dependency would close a cycle.
    Cycle {
        /// The task being updated.
        task: String,
        /// The new edge: `from` would block `to`.
        from: String,
        /// See `from`.
        to: String,
        /// The cycle, starting and ending with `from`, along "blocks" edges.
        path: Vec<String>,
    },
    /// A move to `in_progress` or `completed` while blockers are unfinished.
    Blocked {
        /// The task being updated.
        task: String,
        /// The state asked for.
        target: TaskState,
        /// The unfinished blockers and their states, in list order.
        blockers: Vec<(String, TaskState)>,
    },
    /// The stored list is not a valid task list.
    CorruptState(String),
}

impl fmt::Display for TaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NotFound => f.write_str("Task not found"),
            Self::UpdateNotFound { id } => {
                write!(f, "TaskNotFoundError: The task (id={id}) does not exist.")
            }
            Self::UnknownIds { task, field, ids } => write!(
                f,
                "TaskUpdateError: {field} names {} that {} not exist: {}. Use TaskList to see the existing ids. \
                 The task (id={task}) was not changed.",
                if ids.len() == 1 { "a task" } else { "tasks" },
                if ids.len() == 1 { "does" } else { "do" },
                ids.join(", ")
            ),
            Self::SelfReference { task, field } => write!(
                f,
                "TaskUpdateError: a task cannot depend on itself: {field} of task {task} contains its own id. \
                 The task (id={task}) was not changed."
            ),
            Self::Cycle { task, from, to, path } => write!(
                f,
                "TaskUpdateError: adding \"{from} blocks {to}\" would create a dependency cycle: {} \
                 (\"a → b\" means a blocks b). The task (id={task}) was not changed.",
                path.join(" → ")
            ),
            Self::Blocked { task, target, blockers } => write!(
                f,
                "TaskUpdateError: the task (id={task}) cannot become {target}: it is blocked by unfinished {} {}. \
                 Complete {} first (or delete {} if no longer needed). The task (id={task}) was not changed.",
                if blockers.len() == 1 { "task" } else { "tasks" },
                blockers.iter().map(|(id, s)| format!("#{id} [{s}]")).collect::<Vec<_>>().join(", "),
                if blockers.len() == 1 { "it" } else { "them" },
                if blockers.len() == 1 { "it" } else { "them" },
            ),
            Self::CorruptState(e) => write!(
                f,
                "the task list stored in the agent state (key \"{STATE_KEY}\") is not valid: {e}. \
                 It was left as it is; fix or remove it to start a new list."
            ),
        }
    }
}

impl std::error::Error for TaskError {}

/// The task list: what is stored under [`STATE_KEY`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Tasks {
    /// The tasks, in creation order.
    pub tasks: Vec<Task>,
}

impl Tasks {
    /// Parses the stored JSON text; no value (`None`) or JSON `null` is an
    /// empty list. Anything else that is not a list of tasks is
    /// [`TaskError::CorruptState`].
    pub fn from_state(stored: Option<&str>) -> Result<Self, TaskError> {
        let Some(text) = stored else {
            return Ok(Self::default());
        };
        let value: Value = serde_json::from_str(text).map_err(|e| TaskError::CorruptState(e.to_string()))?;
        if value.is_null() {
            return Ok(Self::default());
        }
        let tasks: Vec<Task> = serde_json::from_value(value).map_err(|e| TaskError::CorruptState(e.to_string()))?;
        let mut seen = HashSet::new();
        if let Some(dup) = tasks.iter().find(|t| !seen.insert(t.id.as_str())) {
            return Err(TaskError::CorruptState(format!("the id {} is used by more than one task", dup.id)));
        }
        Ok(Self { tasks })
    }

    /// The JSON text to store under [`STATE_KEY`].
    pub fn to_state(&self) -> String {
        serde_json::to_string(&self.tasks).expect("tasks always serialise")
    }

    /// The task with `id`.
    pub fn find(&self, id: &str) -> Option<&Task> {
        self.tasks.iter().find(|t| t.id == id)
    }

    fn index(&self, id: &str) -> Option<usize> {
        self.tasks.iter().position(|t| t.id == id)
    }

    /// The id the next task gets: one more than the largest id that parses
    /// as an integer (`1` for none). Deleting the task with the largest id
    /// therefore frees that id again, as in AgentScope.
    pub fn next_id(&self) -> String {
        let max = self.tasks.iter().filter_map(|t| t.id.trim().parse::<i64>().ok()).max().unwrap_or(0);
        (max + 1).to_string()
    }

    /// `TaskCreate`: appends a pending task created at `created_at` and
    /// returns the answer text `Task (id={id}) created successfully: {subject}`.
    pub fn create(&mut self, input: CreateInput, created_at: String) -> String {
        let id = self.next_id();
        let text = format!("Task (id={id}) created successfully: {}", input.subject);
        self.tasks.push(Task {
            subject: input.subject,
            description: input.description,
            metadata: input.metadata.unwrap_or_default(),
            created_at,
            state: TaskState::Pending,
            id,
            owner: None,
            blocks: Vec::new(),
            blocked_by: Vec::new(),
        });
        text
    }

    /// `TaskGet`: the task's details, or [`TaskError::NotFound`].
    pub fn get(&self, id: &str) -> Result<String, TaskError> {
        let task = self.find(id).ok_or(TaskError::NotFound)?;
        let mut lines = vec![
            format!("Task (id={}): {}", task.id, task.subject),
            format!("Status: {}", task.state),
            format!("Description: {}", task.description),
        ];
        if let Some(owner) = task.owner.as_deref().filter(|o| !o.is_empty()) {
            lines.push(format!("Owner: {owner}"));
        }
        if !task.blocked_by.is_empty() {
            lines.push(format!("Blocked by: {}", hash_ids(&task.blocked_by)));
        }
        if !task.blocks.is_empty() {
            lines.push(format!("Blocks: {}", hash_ids(&task.blocks)));
        }
        if !task.metadata.is_empty() {
            lines.push(format!("Metadata: {}", pyrepr::py_repr(&Value::Object(task.metadata.clone()))));
        }
        Ok(lines.join("\n"))
    }

    /// `TaskList`: one line per task, `{id} [{state}] {subject}`, then
    /// `({owner})` and `[blocked by a, b]` when set (no spaces before them,
    /// all blockers listed, completed ones included, as in AgentScope).
    pub fn list(&self) -> String {
        if self.tasks.is_empty() {
            return "No tasks available.".into();
        }
        self.tasks
            .iter()
            .map(|t| {
                let mut line = format!("{} [{}] {}", t.id, t.state, t.subject);
                if let Some(owner) = t.owner.as_deref().filter(|o| !o.is_empty()) {
                    line.push_str(&format!("({owner})"));
                }
                if !t.blocked_by.is_empty() {
                    line.push_str(&format!("[blocked by {}]", t.blocked_by.join(", ")));
                }
                line
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// `TaskUpdate`: applies the update all or nothing and returns the
    /// answer text. Fields are applied in AgentScope's order (subject,
    /// description, add_blocks, add_blocked_by, status, owner, metadata);
    /// on any error the list is left exactly as it was.
    pub fn update(&mut self, input: UpdateInput) -> Result<String, TaskError> {
        let mut next = self.clone();
        let text = next.apply_update(input)?;
        *self = next;
        Ok(text)
    }

    fn apply_update(&mut self, input: UpdateInput) -> Result<String, TaskError> {
        let id = input.task_id.clone();
        let Some(mut at) = self.index(&id) else {
            return Err(TaskError::UpdateNotFound { id });
        };
        let mut fields: Vec<&str> = Vec::new();

        // 1. subject, when non-empty.
        if let Some(subject) = input.subject.filter(|s| !s.is_empty()) {
            self.tasks[at].subject = subject;
            fields.push("subject");
        }
        // 2. description, even when empty.
        if let Some(description) = input.description {
            self.tasks[at].description = description;
            fields.push("description");
        }
        // 3. add_blocks: this task blocks each of them.
        if let Some(ids) = input.add_blocks {
            let new = self.new_relation_ids(&id, "add_blocks", &ids, &self.tasks[at].blocks)?;
            for other in &new {
                self.add_edge(&id, &id, other)?;
            }
            if !new.is_empty() {
                fields.push("add_blocks");
            }
        }
        // 4. add_blocked_by: each of them blocks this task.
        if let Some(ids) = input.add_blocked_by {
            let new = self.new_relation_ids(&id, "add_blocked_by", &ids, &self.tasks[at].blocked_by)?;
            for other in &new {
                self.add_edge(&id, other, &id)?;
            }
            if !new.is_empty() {
                fields.push("add_blocked_by");
            }
        }
        // 5. status (deletion ends the update at once, as in AgentScope).
        match input.status {
            Some(StatusCommand::Deleted) => {
                self.tasks.remove(at);
                for task in &mut self.tasks {
                    task.blocks.retain(|b| *b != id);
                    task.blocked_by.retain(|b| *b != id);
                }
                return Ok(format!("Task (id={id}) has been deleted."));
            }
            Some(command) => {
                let target = match command {
                    StatusCommand::Pending => TaskState::Pending,
                    StatusCommand::InProgress => TaskState::InProgress,
                    _ => TaskState::Completed,
                };
                if target != TaskState::Pending && target != self.tasks[at].state {
                    let blockers = self.unfinished_blockers(&id);
                    if !blockers.is_empty() {
                        return Err(TaskError::Blocked { task: id, target, blockers });
                    }
                }
                at = self.index(&id).expect("the task still exists");
                self.tasks[at].state = target;
                fields.push("status");
            }
            None => {}
        }
        // 6. owner, when given (even empty).
        if let Some(owner) = input.owner {
            self.tasks[at].owner = Some(owner);
            fields.push("owner");
        }
        // 7. metadata, when non-empty: merge; `null` deletes a key.
        if let Some(metadata) = input.metadata.filter(|m| !m.is_empty()) {
            let target = &mut self.tasks[at].metadata;
            for (key, value) in metadata {
                if value.is_null() {
                    target.shift_remove(&key);
                } else {
                    target.insert(key, value);
                }
            }
            fields.push("metadata");
        }

        let mut text = if fields.is_empty() {
            format!(
                "No updates were made to the task (id={id}). Make sure you provided at least one field to update and the values are correct."
            )
        } else {
            format!("Update task (id={id}) {}.", fields.join(", "))
        };
        if self.tasks[at].state == TaskState::Completed {
            text.push_str(COMPLETED_HINT);
        }
        Ok(text)
    }

    /// The ids of `requested` not yet in `existing` (first occurrence only),
    /// after refusing self-references and unknown ids.
    fn new_relation_ids(
        &self,
        task: &str,
        field: &'static str,
        requested: &[String],
        existing: &[String],
    ) -> Result<Vec<String>, TaskError> {
        if requested.iter().any(|r| r == task) {
            return Err(TaskError::SelfReference { task: task.to_string(), field });
        }
        let mut unknown: Vec<String> = Vec::new();
        for r in requested {
            if self.find(r).is_none() && !unknown.contains(r) {
                unknown.push(r.clone());
            }
        }
        if !unknown.is_empty() {
            return Err(TaskError::UnknownIds { task: task.to_string(), field, ids: unknown });
        }
        let mut new: Vec<String> = Vec::new();
        for r in requested {
            if !existing.contains(r) && !new.contains(r) {
                new.push(r.clone());
            }
        }
        Ok(new)
    }

    /// Records "`from` blocks `to`" on both sides, refusing a cycle.
    fn add_edge(&mut self, task: &str, from: &str, to: &str) -> Result<(), TaskError> {
        if let Some(back) = self.blocks_path(to, from) {
            let mut path = vec![from.to_string()];
            path.extend(back);
            return Err(TaskError::Cycle { task: task.to_string(), from: from.into(), to: to.into(), path });
        }
        let f = self.index(from).expect("checked to exist");
        if !self.tasks[f].blocks.iter().any(|b| b == to) {
            self.tasks[f].blocks.push(to.to_string());
        }
        let t = self.index(to).expect("checked to exist");
        if !self.tasks[t].blocked_by.iter().any(|b| b == from) {
            self.tasks[t].blocked_by.push(from.to_string());
        }
        Ok(())
    }

    /// The "blocks" graph: `a → b` when a's `blocks` lists b or b's
    /// `blocked_by` lists a (both are read, so a one-sided relation left by
    /// an edited state file still counts).
    fn successors(&self) -> HashMap<&str, Vec<&str>> {
        let mut next: HashMap<&str, Vec<&str>> = HashMap::new();
        for t in &self.tasks {
            for b in &t.blocks {
                next.entry(t.id.as_str()).or_default().push(b.as_str());
            }
            for a in &t.blocked_by {
                next.entry(a.as_str()).or_default().push(t.id.as_str());
            }
        }
        next
    }

    /// A shortest path `start → … → goal` along "blocks" edges, if any.
    fn blocks_path(&self, start: &str, goal: &str) -> Option<Vec<String>> {
        let next = self.successors();
        let mut parent: HashMap<&str, &str> = HashMap::new();
        let mut queue = VecDeque::from([start]);
        let mut seen = HashSet::from([start]);
        while let Some(node) = queue.pop_front() {
            if node == goal {
                let mut path = vec![goal.to_string()];
                let mut at = goal;
                while let Some(&p) = parent.get(at) {
                    path.push(p.to_string());
                    at = p;
                }
                path.reverse();
                return Some(path);
            }
            for &n in next.get(node).map(Vec::as_slice).unwrap_or_default() {
                if seen.insert(n) {
                    parent.insert(n, node);
                    queue.push_back(n);
                }
            }
        }
        None
    }

    /// The tasks blocking `id` that are not completed, in list order.
    fn unfinished_blockers(&self, id: &str) -> Vec<(String, TaskState)> {
        let Some(task) = self.find(id) else {
            return Vec::new();
        };
        self.tasks
            .iter()
            .filter(|t| t.id != id && (task.blocked_by.contains(&t.id) || t.blocks.iter().any(|b| b == id)))
            .filter(|t| t.state != TaskState::Completed)
            .map(|t| (t.id.clone(), t.state))
            .collect()
    }
}

fn hash_ids(ids: &[String]) -> String {
    ids.iter().map(|i| format!("#{i}")).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests;
