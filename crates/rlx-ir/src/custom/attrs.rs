//! Attributes of a custom op: named scalar / list / string values, printed
//! and parsed by the textual IR.

use std::collections::BTreeMap;
use std::fmt;

/// One attribute value of a custom op.
#[derive(Clone, Debug, PartialEq)]
pub enum CustomAttr {
    /// `true` / `false`.
    Bool(bool),
    /// A signed integer (`3`, `-1`).
    Int(i64),
    /// A float, printed as Rust's `{:?}` writes it (`1.0`, `1e-5`, `NaN`).
    Float(f64),
    /// A string, printed quoted.
    Str(String),
    /// A list of integers, printed `i64[1, 2]`.
    Ints(Vec<i64>),
    /// A list of floats, printed `f64[0.5, 2.0]`.
    Floats(Vec<f64>),
}

impl CustomAttr {
    /// The variant's name, for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            CustomAttr::Bool(_) => "bool",
            CustomAttr::Int(_) => "int",
            CustomAttr::Float(_) => "float",
            CustomAttr::Str(_) => "string",
            CustomAttr::Ints(_) => "int list",
            CustomAttr::Floats(_) => "float list",
        }
    }
}

impl fmt::Display for CustomAttr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CustomAttr::Bool(b) => write!(f, "{b}"),
            CustomAttr::Int(i) => write!(f, "{i}"),
            CustomAttr::Float(x) => write!(f, "{x:?}"),
            CustomAttr::Str(s) => write!(f, "{s:?}"),
            CustomAttr::Ints(v) => write!(f, "i64{v:?}"),
            CustomAttr::Floats(v) => write!(f, "f64{v:?}"),
        }
    }
}

/// The attributes of a custom op, ordered by name (so the text is canonical).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CustomAttrs(BTreeMap<String, CustomAttr>);

impl CustomAttrs {
    /// No attributes.
    pub fn new() -> CustomAttrs {
        CustomAttrs::default()
    }

    /// With `name` set to `value` (replacing any earlier value).
    pub fn with(mut self, name: impl Into<String>, value: CustomAttr) -> CustomAttrs {
        self.0.insert(name.into(), value);
        self
    }

    /// Sets `name` to `value`.
    pub fn insert(&mut self, name: impl Into<String>, value: CustomAttr) {
        self.0.insert(name.into(), value);
    }

    /// The value of `name`, if set.
    pub fn get(&self, name: &str) -> Option<&CustomAttr> {
        self.0.get(name)
    }

    /// The attributes in name order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &CustomAttr)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The bool `name`, or `default` when unset; an error when it has another type.
    pub fn bool_or(&self, name: &str, default: bool) -> Result<bool, String> {
        match self.get(name) {
            None => Ok(default),
            Some(CustomAttr::Bool(b)) => Ok(*b),
            Some(v) => Err(wrong_type(name, "bool", v)),
        }
    }

    /// The integer `name`, or `default` when unset; an error when it has another type.
    pub fn int_or(&self, name: &str, default: i64) -> Result<i64, String> {
        match self.get(name) {
            None => Ok(default),
            Some(CustomAttr::Int(i)) => Ok(*i),
            Some(v) => Err(wrong_type(name, "int", v)),
        }
    }

    /// The float `name` (an integer is accepted), or `default` when unset.
    pub fn float_or(&self, name: &str, default: f64) -> Result<f64, String> {
        match self.get(name) {
            None => Ok(default),
            Some(CustomAttr::Float(x)) => Ok(*x),
            Some(CustomAttr::Int(i)) => Ok(*i as f64),
            Some(v) => Err(wrong_type(name, "float", v)),
        }
    }
}

fn wrong_type(name: &str, want: &str, v: &CustomAttr) -> String {
    format!(
        "attribute `{name}` must be a {want}, is a {} ({v})",
        v.type_name()
    )
}

impl fmt::Display for CustomAttrs {
    /// `{a=1, b=true}`, or nothing when empty.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            return Ok(());
        }
        f.write_str("{")?;
        for (i, (k, v)) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{k}={v}")?;
        }
        f.write_str("}")
    }
}
