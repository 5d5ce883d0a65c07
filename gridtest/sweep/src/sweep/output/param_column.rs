//! A grid's axes as typed Arrow columns (`results.parquet`, `trades.parquet`).

use std::sync::Arc;

use datafusion::arrow::array::{
    ArrayRef, BooleanBuilder, Float64Builder, Int64Builder, StringBuilder,
};
use datafusion::arrow::datatypes::DataType;

use crate::params::{Grid, ParamKind, ParamValue};

/// The grid's axis names and the kind of each.
pub(super) fn axes_of(grid: &Grid) -> (Vec<String>, Vec<ParamKind>) {
    let axes = grid.axes().iter().map(|a| a.name.clone()).collect();
    let kinds = grid
        .axes()
        .iter()
        .map(|a| a.values.first().map_or(ParamKind::Int, ParamValue::kind))
        .collect();
    (axes, kinds)
}

/// One axis of the grid as a typed column.
pub(super) enum ParamColumn {
    Int(Int64Builder),
    Float(Float64Builder),
    Bool(BooleanBuilder),
    Choice(StringBuilder),
}

impl ParamColumn {
    pub(super) fn new(kind: ParamKind) -> Self {
        match kind {
            ParamKind::Int => Self::Int(Int64Builder::new()),
            ParamKind::Float => Self::Float(Float64Builder::new()),
            ParamKind::Bool => Self::Bool(BooleanBuilder::new()),
            ParamKind::Choice => Self::Choice(StringBuilder::new()),
        }
    }

    pub(super) fn append(&mut self, v: Option<&ParamValue>) {
        match (self, v) {
            (Self::Int(b), Some(ParamValue::Int(i))) => b.append_value(*i),
            (Self::Float(b), Some(ParamValue::Float(x))) => b.append_value(*x),
            (Self::Bool(b), Some(ParamValue::Bool(x))) => b.append_value(*x),
            (Self::Choice(b), Some(ParamValue::Choice(s))) => b.append_value(s),
            (Self::Int(b), _) => b.append_null(),
            (Self::Float(b), _) => b.append_null(),
            (Self::Bool(b), _) => b.append_null(),
            (Self::Choice(b), _) => b.append_null(),
        }
    }

    pub(super) fn data_type(kind: ParamKind) -> DataType {
        match kind {
            ParamKind::Int => DataType::Int64,
            ParamKind::Float => DataType::Float64,
            ParamKind::Bool => DataType::Boolean,
            ParamKind::Choice => DataType::Utf8,
        }
    }

    pub(super) fn finish(&mut self) -> ArrayRef {
        match self {
            Self::Int(b) => Arc::new(b.finish()),
            Self::Float(b) => Arc::new(b.finish()),
            Self::Bool(b) => Arc::new(b.finish()),
            Self::Choice(b) => Arc::new(b.finish()),
        }
    }
}
