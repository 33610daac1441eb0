//! Emit pyo3's cfgs for the target interpreter (`Py_3_12`, `Py_GIL_DISABLED`,
//! ...), which `shared_ints` reads.

fn main() {
    pyo3_build_config::use_pyo3_cfgs();
}
