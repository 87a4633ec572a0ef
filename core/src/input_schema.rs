//! A tool's input schema (text a guest gave, hostile) compiled into a
//! validator, and a model's input (hostile) checked against it with
//! errors that name the field.

/// Parses and compiles the input schema of tool `name` (text a guest
/// gave): JSON, `"type": "object"`, `properties` an object, valid JSON
/// Schema. Returns the schema and its validator, or what is wrong.
pub fn compile_input_schema(name: &str, text: &str) -> Result<(serde_json::Value, jsonschema::Validator), String> {
    let schema: serde_json::Value =
        serde_json::from_str(text).map_err(|e| format!("the input schema of '{name}' is not JSON: {e}"))?;
    if schema.get("type").and_then(|t| t.as_str()) != Some("object") {
        return Err(format!("the input schema of '{name}' must have \"type\": \"object\""));
    }
    if schema.get("properties").is_some_and(|p| !p.is_object()) {
        return Err(format!("the input schema of '{name}' has \"properties\" that is not an object"));
    }
    jsonschema::meta::validate(&schema).map_err(|e| {
        format!("the input schema of '{name}' is not valid JSON Schema: {e} (at {})", e.instance_path())
    })?;
    let validator = jsonschema::validator_for(&schema)
        .map_err(|e| format!("the input schema of '{name}' is not valid JSON Schema: {e}"))?;
    Ok((schema, validator))
}

/// Validates `input` against `validator`, the input schema of tool `name`
/// ([`compile_input_schema`]): at most three errors,
/// each naming the field (as a JSON pointer) and the rule it breaks.
pub fn input_errors(validator: &jsonschema::Validator, name: &str, input: &serde_json::Value) -> Result<(), String> {
    let errors: Vec<String> = validator
        .iter_errors(input)
        .take(3)
        .map(|e| {
            let at = e.instance_path().to_string();
            let at = if at.is_empty() { "the input".to_string() } else { format!("`{at}`") };
            format!("{at}: {e}")
        })
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(format!("Input validation failed for tool '{name}': {}", errors.join("; ")))
    }
}
