//! Logical types of values, and the physical representation each one uses inside
//! vectors and on disk.

use std::fmt;

/// The type of a value as the user sees it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum LogicalType {
    /// The type of an untyped NULL (e.g. the literal `NULL`); converts to any type.
    Any,
    Bool,
    Int8,
    Int16,
    Int32,
    Int64,
    UInt8,
    UInt16,
    UInt32,
    UInt64,
    Float,
    Double,
    String,
    /// Days since 1970-01-01.
    Date,
    /// Microseconds since 1970-01-01 00:00:00 UTC.
    Timestamp,
    Interval,
    /// openCypher LOCAL TIME: nanoseconds since midnight.
    LocalTime,
    /// openCypher ZONED TIME: a time of day with a UTC offset.
    Time,
    /// openCypher LOCAL DATETIME, nanosecond precision.
    LocalDateTime,
    /// openCypher ZONED DATETIME: local fields, offset and optional zone name.
    DateTime,
    /// openCypher DURATION: months, days, seconds and nanoseconds.
    Duration,
    /// Internal node or rel identifier (table, offset).
    InternalId,
    List(Box<LogicalType>),
    Struct(Vec<(String, LogicalType)>),
    Map(Box<LogicalType>, Box<LogicalType>),
    Node,
    Rel,
    Path,
}

/// How values of a logical type are laid out in a vector or column chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PhysicalType {
    Bool,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    F32,
    F64,
    String,
    Interval,
    InternalId,
    /// Nested and graph values: one [`crate::Value`] per slot (for now).
    Value,
}

impl LogicalType {
    pub fn physical(&self) -> PhysicalType {
        match self {
            LogicalType::Bool => PhysicalType::Bool,
            LogicalType::Int8 => PhysicalType::I8,
            LogicalType::Int16 => PhysicalType::I16,
            LogicalType::Int32 | LogicalType::Date => PhysicalType::I32,
            LogicalType::Int64 | LogicalType::Timestamp => PhysicalType::I64,
            LogicalType::UInt8 => PhysicalType::U8,
            LogicalType::UInt16 => PhysicalType::U16,
            LogicalType::UInt32 => PhysicalType::U32,
            LogicalType::UInt64 => PhysicalType::U64,
            LogicalType::Float => PhysicalType::F32,
            LogicalType::Double => PhysicalType::F64,
            LogicalType::String => PhysicalType::String,
            LogicalType::Interval => PhysicalType::Interval,
            LogicalType::InternalId => PhysicalType::InternalId,
            LogicalType::Any
            | LogicalType::LocalTime
            | LogicalType::Time
            | LogicalType::LocalDateTime
            | LogicalType::DateTime
            | LogicalType::Duration
            | LogicalType::List(_)
            | LogicalType::Struct(_)
            | LogicalType::Map(_, _)
            | LogicalType::Node
            | LogicalType::Rel
            | LogicalType::Path => PhysicalType::Value,
        }
    }

    /// Parse a type name as written in DDL (`INT64`, `INT`, `STRING`, ...).
    /// Nested types are built by the binder from the AST.
    pub fn from_name(name: &str) -> Option<LogicalType> {
        Some(match name.to_ascii_uppercase().as_str() {
            "BOOL" | "BOOLEAN" => LogicalType::Bool,
            "INT8" | "TINYINT" => LogicalType::Int8,
            "INT16" | "SMALLINT" => LogicalType::Int16,
            "INT32" | "INT" | "INTEGER" => LogicalType::Int32,
            "INT64" | "BIGINT" | "SERIAL" => LogicalType::Int64,
            "UINT8" | "UTINYINT" => LogicalType::UInt8,
            "UINT16" | "USMALLINT" => LogicalType::UInt16,
            "UINT32" | "UINTEGER" => LogicalType::UInt32,
            "UINT64" | "UBIGINT" => LogicalType::UInt64,
            "FLOAT" | "FLOAT32" | "REAL" => LogicalType::Float,
            "DOUBLE" | "FLOAT64" => LogicalType::Double,
            "STRING" | "VARCHAR" | "TEXT" => LogicalType::String,
            "DATE" => LogicalType::Date,
            "TIMESTAMP" => LogicalType::Timestamp,
            "INTERVAL" => LogicalType::Interval,
            "LOCAL TIME" | "LOCAL_TIME" | "LOCALTIME" => LogicalType::LocalTime,
            "ZONED TIME" | "ZONED_TIME" | "TIME" => LogicalType::Time,
            "LOCAL DATETIME" | "LOCAL_DATETIME" | "LOCALDATETIME" => LogicalType::LocalDateTime,
            "ZONED DATETIME" | "ZONED_DATETIME" | "DATETIME" => LogicalType::DateTime,
            "DURATION" => LogicalType::Duration,
            "INTERNAL_ID" => LogicalType::InternalId,
            "NODE" => LogicalType::Node,
            "REL" | "RELATIONSHIP" => LogicalType::Rel,
            "PATH" => LogicalType::Path,
            _ => return None,
        })
    }

    pub fn is_integer(&self) -> bool {
        matches!(
            self,
            LogicalType::Int8
                | LogicalType::Int16
                | LogicalType::Int32
                | LogicalType::Int64
                | LogicalType::UInt8
                | LogicalType::UInt16
                | LogicalType::UInt32
                | LogicalType::UInt64
        )
    }

    pub fn is_numeric(&self) -> bool {
        self.is_integer() || matches!(self, LogicalType::Float | LogicalType::Double)
    }

    /// Stable tag used in the on-disk catalog.
    pub fn tag(&self) -> u8 {
        match self {
            LogicalType::Any => 0,
            LogicalType::Bool => 1,
            LogicalType::Int8 => 2,
            LogicalType::Int16 => 3,
            LogicalType::Int32 => 4,
            LogicalType::Int64 => 5,
            LogicalType::UInt8 => 6,
            LogicalType::UInt16 => 7,
            LogicalType::UInt32 => 8,
            LogicalType::UInt64 => 9,
            LogicalType::Float => 10,
            LogicalType::Double => 11,
            LogicalType::String => 12,
            LogicalType::Date => 13,
            LogicalType::Timestamp => 14,
            LogicalType::Interval => 15,
            LogicalType::InternalId => 16,
            LogicalType::List(_) => 17,
            LogicalType::Struct(_) => 18,
            LogicalType::Map(_, _) => 19,
            LogicalType::Node => 20,
            LogicalType::Rel => 21,
            LogicalType::Path => 22,
            LogicalType::LocalTime => 23,
            LogicalType::Time => 24,
            LogicalType::LocalDateTime => 25,
            LogicalType::DateTime => 26,
            LogicalType::Duration => 27,
        }
    }

    /// Inverse of [`LogicalType::tag`] for the non-nested types.
    pub fn from_simple_tag(tag: u8) -> Option<LogicalType> {
        Some(match tag {
            0 => LogicalType::Any,
            1 => LogicalType::Bool,
            2 => LogicalType::Int8,
            3 => LogicalType::Int16,
            4 => LogicalType::Int32,
            5 => LogicalType::Int64,
            6 => LogicalType::UInt8,
            7 => LogicalType::UInt16,
            8 => LogicalType::UInt32,
            9 => LogicalType::UInt64,
            10 => LogicalType::Float,
            11 => LogicalType::Double,
            12 => LogicalType::String,
            13 => LogicalType::Date,
            14 => LogicalType::Timestamp,
            15 => LogicalType::Interval,
            16 => LogicalType::InternalId,
            20 => LogicalType::Node,
            21 => LogicalType::Rel,
            22 => LogicalType::Path,
            23 => LogicalType::LocalTime,
            24 => LogicalType::Time,
            25 => LogicalType::LocalDateTime,
            26 => LogicalType::DateTime,
            27 => LogicalType::Duration,
            _ => return None,
        })
    }
}

impl fmt::Display for LogicalType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LogicalType::Any => write!(f, "ANY"),
            LogicalType::Bool => write!(f, "BOOL"),
            LogicalType::Int8 => write!(f, "INT8"),
            LogicalType::Int16 => write!(f, "INT16"),
            LogicalType::Int32 => write!(f, "INT32"),
            LogicalType::Int64 => write!(f, "INT64"),
            LogicalType::UInt8 => write!(f, "UINT8"),
            LogicalType::UInt16 => write!(f, "UINT16"),
            LogicalType::UInt32 => write!(f, "UINT32"),
            LogicalType::UInt64 => write!(f, "UINT64"),
            LogicalType::Float => write!(f, "FLOAT"),
            LogicalType::Double => write!(f, "DOUBLE"),
            LogicalType::String => write!(f, "STRING"),
            LogicalType::Date => write!(f, "DATE"),
            LogicalType::Timestamp => write!(f, "TIMESTAMP"),
            LogicalType::Interval => write!(f, "INTERVAL"),
            LogicalType::LocalTime => write!(f, "LOCAL TIME"),
            LogicalType::Time => write!(f, "ZONED TIME"),
            LogicalType::LocalDateTime => write!(f, "LOCAL DATETIME"),
            LogicalType::DateTime => write!(f, "ZONED DATETIME"),
            LogicalType::Duration => write!(f, "DURATION"),
            LogicalType::InternalId => write!(f, "INTERNAL_ID"),
            LogicalType::List(t) => write!(f, "{t}[]"),
            LogicalType::Struct(fields) => {
                write!(f, "STRUCT(")?;
                for (i, (n, t)) in fields.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{n} {t}")?;
                }
                write!(f, ")")
            }
            LogicalType::Map(k, v) => write!(f, "MAP({k}, {v})"),
            LogicalType::Node => write!(f, "NODE"),
            LogicalType::Rel => write!(f, "REL"),
            LogicalType::Path => write!(f, "PATH"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simple_tags_round_trip() {
        for tag in 0..=27u8 {
            if let Some(t) = LogicalType::from_simple_tag(tag) {
                assert_eq!(t.tag(), tag);
                assert_eq!(
                    LogicalType::from_name(&t.to_string())
                        .unwrap_or(LogicalType::Any)
                        .tag(),
                    if tag == 0 { 0 } else { tag }
                );
            }
        }
    }
}
