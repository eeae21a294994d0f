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
    /// A whole number (numeric strings accepted), shown with Claude Code's bounds: every
    /// release's Read declares `offset` and `limit` so and refuses a fraction (`1.5`) as input.
    Int(Lower),
}

/// The lower bound an integer parameter's schema declares. Only shown: from 2.1.181 Claude
/// Code's Read takes `offset: -1` and `limit: 0` all the same, and before, the Read refuses them
/// itself (`Tools::validate_read`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Lower {
    /// `minimum: 0`.
    AtLeastZero,
    /// `exclusiveMinimum: 0`.
    AboveZero,
}

/// The largest integer a schema allows (JavaScript's `Number.MAX_SAFE_INTEGER`, as Claude Code
/// declares it).
const MAX_SAFE_INTEGER: u64 = 9_007_199_254_740_991;

/// Whether `n` is a whole number a schema's integer takes.
fn integral(n: f64) -> bool {
    n.is_finite() && n.fract() == 0.0 && n.abs() <= MAX_SAFE_INTEGER as f64
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Param {
    pub name: &'static str,
    pub ty: Ty,
    pub required: bool,
    pub description: &'static str,
    /// The schema declares `"default": false` (a boolean Claude Code declares so).
    pub default_false: bool,
}

pub(crate) const fn req(name: &'static str, ty: Ty, description: &'static str) -> Param {
    Param { name, ty, required: true, description, default_false: false }
}

pub(crate) const fn opt(name: &'static str, ty: Ty, description: &'static str) -> Param {
    Param { name, ty, required: false, description, default_false: false }
}

/// An optional boolean whose schema says it defaults to false.
pub(crate) const fn opt_false(name: &'static str, description: &'static str) -> Param {
    Param { name, ty: Ty::Bool, required: false, description, default_false: true }
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
            Ty::Int(Lower::AtLeastZero) => json!({"type": "integer", "minimum": 0, "maximum": MAX_SAFE_INTEGER}),
            Ty::Int(Lower::AboveZero) => json!({"type": "integer", "exclusiveMinimum": 0, "maximum": MAX_SAFE_INTEGER}),
        };
        prop["description"] = json!(p.description);
        if p.default_false {
            prop["default"] = json!(false);
        }
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
            (Ty::Int(_), Value::Number(n)) => n.as_f64().filter(|n| integral(*n)).map(|n| json!(n)),
            (Ty::Int(_), Value::String(s)) => s.trim().parse::<f64>().ok().filter(|n| integral(*n)).map(|n| json!(n)),
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
                    Ty::Int(_) => "integer",
                };
                // A fraction, given as a number or as a numeric string, is a number.
                let given = match (p.ty, v) {
                    (Ty::Int(_), Value::String(s)) if s.trim().parse::<f64>().is_ok() => "number",
                    _ => json_type(v),
                };
                wrong.push((p.name, expected, given));
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

    #[test]
    fn integers_refuse_fractions_and_show_their_bounds() {
        const I: &[Param] = &[opt("offset", Ty::Int(Lower::AtLeastZero), "o"), opt("limit", Ty::Int(Lower::AboveZero), "l")];
        let refused = |input| validate("Read", I, &input).unwrap_err().0;
        let fraction = "Read cannot run with this input; correct it and call Read again:\n- `offset` must be of type integer; this call gave number";
        assert_eq!(refused(json!({"offset": 1.5})), fraction);
        assert_eq!(refused(json!({"offset": "1.5"})), fraction);
        assert!(refused(json!({"limit": "two"})).ends_with("`limit` must be of type integer; this call gave string"));
        let ok = validate("Read", I, &json!({"offset": "2", "limit": 3})).unwrap();
        assert_eq!((ok["offset"].as_f64(), ok["limit"].as_f64()), (Some(2.0), Some(3.0)));
        // Negative and zero pass this check: which releases refuse them is the Read's own
        // check (`Tools::validate_read`).
        assert!(validate("Read", I, &json!({"offset": -1, "limit": 0})).is_ok());
        let schema = json_schema(I);
        assert_eq!(schema["properties"]["offset"]["type"], "integer");
        assert_eq!(schema["properties"]["offset"]["minimum"], 0);
        assert_eq!(schema["properties"]["limit"]["exclusiveMinimum"], 0);
        assert_eq!(schema["properties"]["limit"]["maximum"], json!(9_007_199_254_740_991u64));
    }
}
