//! The C header of a compiled library (`ptec compile --header`): the types,
//! codes and functions of [`ptec_runtime::c_abi`], with the library's own
//! methods, inputs and outputs spelled out in comments.

use std::fmt::Write as _;

use ptec_runtime::c_abi::Status;
use ptec_runtime::{DimSpec, ElementType, MethodAbi, TensorSlot};

/// The types every ptec header shares, guarded so that headers of several
/// libraries can be included together.
const SHARED_TYPES: &str = r#"#ifndef PTEC_ABI_TYPES
#define PTEC_ABI_TYPES

/* An instance: the memory of every method (activations, inputs, outputs)
   and the state that persists between calls. Instances are independent: two
   threads may run methods at once on two instances, never on one. */
typedef struct ptec_instance ptec_instance;

/* What an input or output looks like. Returned by *_input_info and
   *_output_info; points into the library's read-only data. */
typedef struct ptec_tensor_info {
    int32_t dtype;            /* a PTEC_<TYPE> code */
    int32_t rank;
    const int64_t *sizes;     /* rank sizes; -1 where dynamic */
    const int64_t *max_sizes; /* rank upper bounds (= sizes where fixed) */
    const uint8_t *dim_order; /* rank dimensions, outermost first: how the
                                 data is laid out (0, 1, ... is contiguous) */
} ptec_tensor_info;

/* A tensor passed to *_run: data laid out in the dim order its info gives,
   and its sizes (read for inputs, written for outputs). Neither may be
   NULL. An output's data must have room for its max_sizes. */
typedef struct ptec_tensor {
    void *data;
    int64_t *sizes;
} ptec_tensor;

#endif /* PTEC_ABI_TYPES */
"#;

fn tensor_line(abi: &MethodAbi, index: usize, slot: &TensorSlot) -> String {
    let sizes: Vec<String> = slot
        .shape
        .iter()
        .map(|dim| match *dim {
            DimSpec::Fixed(size) => size.to_string(),
            DimSpec::Symbol(symbol) => format!("<= {}", abi.dim_bounds[symbol]),
        })
        .collect();
    let contiguous = slot
        .dim_order
        .iter()
        .enumerate()
        .all(|(position, &dim)| position == dim as usize);
    let layout = if contiguous {
        String::new()
    } else {
        format!(", dim order {:?}", slot.dim_order)
    };
    format!(
        " *     {index}: {} [{}]{layout}\n",
        slot.element,
        sizes.join(", ")
    )
}

/// The header for a library compiled from `source` with `prefix`.
pub fn c_header(prefix: &str, source: &str, methods: &[MethodAbi]) -> String {
    let guard = format!("{}_H", prefix.to_ascii_uppercase());
    let upper = prefix.to_ascii_uppercase();
    let mut text = String::new();
    let usage = [
        format!(
            "/* The C interface of {source}, compiled by ptec {}.",
            env!("CARGO_PKG_VERSION")
        ),
        String::new(),
        "Link with the shared object (cc main.c model.so -lm) or the object".to_string(),
        "file (cc main.c model.o -lm). Typical use:".to_string(),
        String::new(),
        format!("    ptec_instance *instance = {prefix}_create();"),
        "    ptec_tensor inputs[] = {{data, sizes}, ...};".to_string(),
        "    ptec_tensor outputs[] = {{buffer, sizes_out}, ...};".to_string(),
        format!(
            "    int32_t status = {prefix}_run(instance, {upper}_METHOD_..., inputs, outputs);"
        ),
        format!("    if (status != PTEC_OK) puts({prefix}_status_message(status));"),
        format!("    {prefix}_destroy(instance);"),
        String::new(),
        "Methods:".to_string(),
    ];
    for (index, line) in usage.iter().enumerate() {
        let lead = if index == 0 { "" } else { " *" };
        let space = if index == 0 || line.is_empty() {
            ""
        } else {
            " "
        };
        let _ = writeln!(text, "{lead}{space}{line}");
    }
    for (index, abi) in methods.iter().enumerate() {
        let _ = writeln!(text, " *   {index} \"{}\"", abi.name);
        let _ = writeln!(text, " *     inputs:");
        for (slot_index, slot) in abi.inputs.iter().enumerate() {
            text.push_str(&tensor_line(abi, slot_index, slot));
        }
        let _ = writeln!(text, " *     outputs:");
        for (slot_index, slot) in abi.outputs.iter().enumerate() {
            text.push_str(&tensor_line(abi, slot_index, slot));
        }
    }
    let _ = write!(
        text,
        " */\n#ifndef {guard}\n#define {guard}\n\n#include <stdint.h>\n\n\
         #ifdef __cplusplus\nextern \"C\" {{\n#endif\n\n{SHARED_TYPES}\n"
    );
    let _ = writeln!(
        text,
        "#ifndef PTEC_ABI_CODES\n#define PTEC_ABI_CODES\n\n\
         /* Element types (ExecuTorch's ScalarType numbers). */"
    );
    for element in ElementType::ALL {
        let _ = writeln!(
            text,
            "#define PTEC_{} {} /* {} byte(s) */",
            element.constant(),
            element.code(),
            element.size()
        );
    }
    let _ = writeln!(
        text,
        "\n/* Status codes: 0 is success, below 0 a bad call, above 0 an error\n   \
         while running a method (see *_status_message). */\n#define PTEC_OK 0"
    );
    for status in Status::ALL {
        let _ = writeln!(
            text,
            "#define PTEC_{} ({}) /* {} */",
            status.constant(),
            status as i32,
            status.message()
        );
    }
    let _ = writeln!(text, "\n#endif /* PTEC_ABI_CODES */\n");
    for (index, abi) in methods.iter().enumerate() {
        let name = super::symbol_part(&abi.name).to_ascii_uppercase();
        let _ = writeln!(text, "#define {upper}_METHOD_{name} {index}");
    }
    let _ = write!(
        text,
        "\n\
/* A new instance, its state initialised; NULL when out of memory. */\n\
ptec_instance *{prefix}_create(void);\n\n\
/* Frees an instance and everything it owns; NULL is allowed. */\n\
void {prefix}_destroy(ptec_instance *instance);\n\n\
/* Runs the instance's methods on `threads` threads from now on (an instance\n   \
starts with one; results are the same bits whatever the count). Returns\n   \
PTEC_OK, or PTEC_BAD_THREADS when `threads` is below 1 (nothing changes) or\n   \
its threads cannot be started (it then runs on one). Not during a run. */\n\
int32_t {prefix}_set_threads(ptec_instance *instance, int32_t threads);\n\n\
/* The number of methods, and the name of method `method` (NULL when out of\n   range). */\n\
int32_t {prefix}_method_count(void);\n\
const char *{prefix}_method_name(int32_t method);\n\n\
/* The number of inputs and outputs of a method (PTEC_NO_SUCH_METHOD when out\n   of range). */\n\
int32_t {prefix}_input_count(int32_t method);\n\
int32_t {prefix}_output_count(int32_t method);\n\n\
/* What input or output `index` of a method looks like (NULL when either is\n   out of range). */\n\
const ptec_tensor_info *{prefix}_input_info(int32_t method, int32_t index);\n\
const ptec_tensor_info *{prefix}_output_info(int32_t method, int32_t index);\n\n\
/* Runs a method: checks the inputs' sizes, copies them in, runs, and copies\n   \
the outputs and their sizes out. `inputs` and `outputs` hold one tensor\n   \
per input and output. Returns PTEC_OK or a status code. */\n\
int32_t {prefix}_run(ptec_instance *instance, int32_t method,\n                     \
const ptec_tensor *inputs, ptec_tensor *outputs);\n\n\
/* A description of a status code, in static storage. */\n\
const char *{prefix}_status_message(int32_t status);\n\n\
#ifdef __cplusplus\n}}\n#endif\n\n#endif /* {guard} */\n"
    );
    text
}
