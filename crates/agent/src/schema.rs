//! Tool input schemas: the JSON Schema the model is shown, and the check Claude Code's Zod
//! schemas make before a tool runs, reporting the same problems (as an `InputValidationError`)
//! in Mneme's words (`crate::messages`).

use crate::messages;
use mneme_store::settings::json_type;
use serde_json::{json, Map, Value};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ty {
    Str,
    /// A number; numeric strings are accepted, as Claude Code's preprocessing does.
    Num,
    /// A boolean; `"true"`/`"false"` strings are accepted.
    Bool,
    Enum(&'static [&'static str]),
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Param {
    pub name: &'static str,
    pub ty: Ty,
    pub required: bool,
    pub description: &'static str,
}

pub(crate) const fn req(name: &'static str, ty: Ty, description: &'static str) -> Param {
    Param { name, ty, required: true, description }
}

pub(crate) const fn opt(name: &'static str, ty: Ty, description: &'static str) -> Param {
    Param { name, ty, required: false, description }
}

/// The JSON Schema for a tool's input (a strict object, as Claude Code declares them).
pub(crate) fn json_schema(params: &[Param]) -> Value {
    let mut props = Map::new();
    for p in params {
        let mut prop = match p.ty {
            Ty::Str => json!({"type": "string"}),
            Ty::Num => json!({"type": "number"}),
            Ty::Bool => json!({"type": "boolean"}),
            Ty::Enum(values) => json!({"type": "string", "enum": values}),
        };
        prop["description"] = json!(p.description);
        props.insert(p.name.to_string(), prop);
    }
    let required: Vec<&str> = params.iter().filter(|p| p.required).map(|p| p.name).collect();
    json!({
        "type": "object",
        "properties": props,
        "required": required,
        "additionalProperties": false,
        "$schema": "http://json-schema.org/draft-07/schema#",
    })
}

/// Why an input failed its schema; the text follows Claude Code's `InputValidationError`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct InputError(pub String);

/// Checks `input` against `params` and returns it with coerced numbers and booleans.
pub(crate) fn validate(tool: &str, params: &[Param], input: &Value) -> Result<Map<String, Value>, InputError> {
    let Some(obj) = input.as_object() else {
        return Err(InputError(messages::bad_input(tool, &[messages::wrong_type("input", "object", json_type(input))])));
    };
    let mut missing = Vec::new();
    let mut wrong = Vec::new();
    let mut out = Map::new();
    for p in params {
        let Some(v) = obj.get(p.name) else {
            if p.required {
                missing.push(p.name);
            }
            continue;
        };
        let coerced = match (p.ty, v) {
            (Ty::Str, Value::String(_)) | (Ty::Num, Value::Number(_)) | (Ty::Bool, Value::Bool(_)) => Some(v.clone()),
            (Ty::Num, Value::String(s)) => s.trim().parse::<f64>().ok().map(|n| json!(n)),
            (Ty::Bool, Value::String(s)) if s == "true" || s == "false" => Some(json!(s == "true")),
            (Ty::Enum(values), Value::String(s)) if values.contains(&s.as_str()) => Some(v.clone()),
            (Ty::Enum(values), Value::String(s)) => return Err(InputError(messages::not_allowed(p.name, values, s))),
            _ => None,
        };
        match coerced {
            Some(c) => {
                out.insert(p.name.to_string(), c);
            }
            None => {
                let expected = match p.ty {
                    Ty::Str | Ty::Enum(_) => "string",
                    Ty::Num => "number",
                    Ty::Bool => "boolean",
                };
                wrong.push((p.name, expected, json_type(v)));
            }
        }
    }
    let unexpected: Vec<&String> = obj.keys().filter(|k| !params.iter().any(|p| p.name == k.as_str())).collect();
    let mut issues: Vec<String> = missing.iter().map(|m| messages::missing_param(m)).collect();
    issues.extend(unexpected.iter().map(|k| messages::unknown_param(k)));
    issues.extend(wrong.iter().map(|(name, exp, got)| messages::wrong_type(name, exp, got)));
    if issues.is_empty() {
        return Ok(out);
    }
    Err(InputError(messages::bad_input(tool, &issues)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: &[Param] = &[req("file_path", Ty::Str, "path"), opt("limit", Ty::Num, "n"), opt("all", Ty::Bool, "b")];

    #[test]
    fn problems_in_claude_codes_order() {
        assert_eq!(
            validate("Read", P, &json!({"limit": "5"})).unwrap_err().0,
            "Read cannot run with this input; correct it and call Read again:\n- `file_path` is required but missing"
        );
        assert_eq!(
            validate("Read", P, &json!({"file_path": 3, "extra": 1})).unwrap_err().0,
            "Read cannot run with this input; correct it and call Read again:\n- `extra` is not a parameter of this tool\n\
             - `file_path` must be of type string; this call gave number"
        );
        assert_eq!(
            validate("Read", P, &json!("x")).unwrap_err().0,
            "Read cannot run with this input; correct it and call Read again:\n- `input` must be of type object; this call gave string"
        );
        let ok = validate("Read", P, &json!({"file_path": "/a", "limit": "5", "all": "true"})).unwrap();
        assert_eq!(ok["limit"], json!(5.0));
        assert_eq!(ok["all"], json!(true));
    }
}
