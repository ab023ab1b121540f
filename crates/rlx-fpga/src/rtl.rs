//! The top module: one sequential engine shared by all layers (an FSM with
//! INIT / one tap per cycle / WRITE per output), a signed multiply-add for
//! conv / dense, a running max for pool / relu, the Q0.31 requantization
//! of the integer reference, and an arg-max scan over the last layer.
//! Written in the SystemVerilog subset iverilog 11 and Verilator 5 share:
//! plain modules, `logic` / `int`, `always_ff` / `always_comb`, size casts,
//! `$readmemh`.

use crate::config::{FpgaExportConfig, InputIface, OutputIface, OutputKind};
use crate::plan::{addr_bits, Engine, LayerPlan, Plan};
use std::fmt::Write;

/// An int8 constant as a sized signed literal.
fn s8(v: i64) -> String {
    format!("8'sh{:02x}", v as u8)
}

/// The index of a memory of `depth` words from an `int` expression: an
/// unsigned size cast (a plain `w'(int)` stays signed).
fn index(depth: usize, expr: &str) -> String {
    format!("{}'($unsigned({expr}))", addr_bits(depth))
}

fn ports(plan: &Plan, config: &FpgaExportConfig) -> Vec<String> {
    let p = &config.io.ports;
    let out_bits = addr_bits(plan.output_len());
    let mut v = vec![
        format!("input  logic {}", p.clk),
        format!("input  logic {}", p.rst_n),
    ];
    match config.io.input {
        InputIface::Stream => v.push(format!("input  logic {}", p.in_valid)),
        InputIface::MemoryMapped => {
            v.push(format!("input  logic {}", p.in_we));
            v.push(format!(
                "input  logic [{}:0] {}",
                addr_bits(plan.input_len) - 1,
                p.in_addr
            ));
            v.push(format!("input  logic {}", p.start));
        }
    }
    v.push(format!("input  logic signed [7:0] {}", p.in_data));
    v.push(format!("output logic {}", p.in_ready));
    if config.io.kind == OutputKind::Logits {
        match config.io.output {
            OutputIface::Stream => {
                v.push(format!("output logic {}", p.out_valid));
                v.push(format!("output logic [{}:0] {}", out_bits - 1, p.out_index));
            }
            OutputIface::MemoryMapped => {
                v.push(format!("input  logic [{}:0] {}", out_bits - 1, p.out_index))
            }
        }
        v.push(format!("output logic signed [7:0] {}", p.out_data));
    }
    v.push(format!("output logic [{}:0] {}", out_bits - 1, p.out_class));
    v.push(format!("output logic {}", p.done));
    v.push(format!("output logic {}", p.busy));
    if let Some(sb) = &config.io.sideband {
        v.push(format!("input  logic [{}:0] {}_in", sb.width - 1, sb.name));
        v.push(format!("output logic [{}:0] {}_out", sb.width - 1, sb.name));
    }
    v
}

const REQUANT: &str = r#"
  // The integer reference's requantization: the shifted accumulator times
  // the Q0.31 multiplier, rounded doubling high half (ties up for positive
  // products, toward zero for negative ones), then a right shift rounded
  // half away from zero; plus the output zero point, clamped.
  function automatic logic signed [7:0] q_requant(input int f_acc, input int f_mult,
                                                  input int f_shift, input int f_zp,
                                                  input int f_lo, input int f_hi);
    int f_x;
    int f_right;
    longint f_prod;
    longint f_high;
    longint f_mag;
    longint f_v;
    f_x = (f_shift > 0) ? (f_acc <<< f_shift) : f_acc;
    if (f_x == 32'sh80000000 && f_mult == 32'sh80000000) f_high = 64'sd2147483647;
    else begin
      f_prod = longint'(f_x) * longint'(f_mult);
      if (f_prod >= 0) f_high = (f_prod + 64'sd1073741824) >>> 31;
      else f_high = -((-f_prod + 64'sd1073741823) >>> 31);
    end
    f_right = (f_shift > 0) ? 0 : -f_shift;
    f_mag = (f_high < 0) ? -f_high : f_high;
    f_mag = (f_mag + ((64'sd1 <<< f_right) >>> 1)) >>> f_right;
    f_v = ((f_high < 0) ? -f_mag : f_mag) + longint'(f_zp);
    if (f_v < longint'(f_lo)) f_v = longint'(f_lo);
    if (f_v > longint'(f_hi)) f_v = longint'(f_hi);
    return 8'(f_v);
  endfunction
"#;

/// Nested counters (innermost first) that step like an odometer and run
/// `on_wrap` when all of them wrap.
fn odometer(digits: &[(&str, &str)], on_wrap: &str, pad: &str) -> String {
    let Some(((c, n), rest)) = digits.split_first() else {
        return format!("{pad}{on_wrap}\n");
    };
    format!(
        "{pad}if ({c} + 1 < {n}) {c} <= {c} + 1;\n{pad}else begin\n{pad}  {c} <= 0;\n{}{pad}end\n",
        odometer(rest, on_wrap, &format!("{pad}  "))
    )
}

/// The per-layer branch of the tap / constant multiplexer.
fn layer_branch(i: usize, l: &LayerPlan, src_depth: usize, acc: u32) -> String {
    let mut b = String::new();
    let [n0, n1, n2] = l.taps;
    let [ny, nx, nc] = l.out;
    let _ = writeln!(b, "      {i}: begin // {}", l.label);
    let _ = writeln!(
        b,
        "        q_n0 = {n0}; q_n1 = {n1}; q_n2 = {n2}; q_ny = {ny}; q_nx = {nx}; q_nc = {nc};"
    );
    let src = format!("q_act{i}");
    let window = |g: &rlx_quant_int8::Geometry, b: &mut String| {
        let _ = writeln!(
            b,
            "        q_iy = q_oy * {} + q_t0 - {}; q_ix = q_ox * {} + q_t1 - {};",
            g.stride_h, g.pads[0], g.stride_w, g.pads[2]
        );
        let _ = writeln!(
            b,
            "        q_ok = (q_iy >= 0) && (q_iy < {}) && (q_ix >= 0) && (q_ix < {});",
            g.in_h, g.in_w
        );
    };
    match &l.engine {
        Engine::Conv(g) => {
            window(g, &mut b);
            let zp = l.weights.as_ref().map_or(0, |p| p.input.zero_point);
            let _ = writeln!(
                b,
                "        q_x = q_ok ? {src}[{}] : {};",
                index(
                    src_depth,
                    &format!("(q_iy * {} + q_ix) * {} + q_t2", g.in_w, g.in_c)
                ),
                s8(zp as i64)
            );
            let _ = writeln!(
                b,
                "        q_w = q_l{i}_w[{}];",
                index(
                    l.weights.as_ref().map_or(1, |p| p.weights.len()),
                    &format!(
                        "((q_oc * {} + q_t0) * {} + q_t1) * {} + q_t2",
                        g.k_h, g.k_w, g.in_c
                    )
                )
            );
        }
        Engine::Dense { depth } => {
            let _ = writeln!(b, "        q_ok = 1'b1;");
            let _ = writeln!(b, "        q_x = {src}[{}];", index(src_depth, "q_t2"));
            let _ = writeln!(
                b,
                "        q_w = q_l{i}_w[{}];",
                index(depth * nc, &format!("q_oc * {depth} + q_t2"))
            );
        }
        Engine::MaxPool(g) => {
            window(g, &mut b);
            let _ = writeln!(
                b,
                "        q_x = q_ok ? {src}[{}] : {};",
                index(
                    src_depth,
                    &format!("(q_iy * {} + q_ix) * {} + q_oc", g.in_w, g.in_c)
                ),
                s8(-128)
            );
        }
        Engine::Relu => {
            let _ = writeln!(b, "        q_ok = 1'b1;");
            let _ = writeln!(b, "        q_x = {src}[{}];", index(src_depth, "q_oc"));
        }
    }
    match &l.weights {
        Some(p) => {
            let c = |name: &str| format!("q_l{i}_{name}[{}]", index(nc, "q_oc"));
            let _ = writeln!(
                b,
                "        q_mac = 1'b1; q_izp = {}; q_ozp = {}; q_lo = {}; q_hi = {};",
                p.input.zero_point, p.output.zero_point, p.activation.0, p.activation.1
            );
            let _ = writeln!(
                b,
                "        q_bias = {acc}'({}); q_mult = {}; q_shift = 32'({});",
                c("b"),
                c("m"),
                c("s")
            );
        }
        None => {
            let _ = writeln!(b, "        q_floor = {};", s8(l.floor as i64));
        }
    }
    let _ = writeln!(b, "      end");
    b
}

/// The top module's text.
pub(crate) fn top_module(
    top: &str,
    plan: &Plan,
    config: &FpgaExportConfig,
    header: &str,
) -> String {
    let p = &config.io.ports;
    let acc = config.acc_bits;
    let nl = plan.layers.len();
    let in_len = plan.input_len;
    let out_len = plan.output_len();
    let has_mac = plan.layers.iter().any(LayerPlan::is_mac);
    let has_window = plan
        .layers
        .iter()
        .any(|l| matches!(l.engine, Engine::Conv(_) | Engine::MaxPool(_)));
    let mut s = String::new();
    let _ = writeln!(s, "{header}");
    let _ = writeln!(
        s,
        "module {top} (\n  {}\n);",
        ports(plan, config).join(",\n  ")
    );
    s.push_str(
        "  localparam logic [2:0] Q_IDLE = 3'd0, Q_INIT = 3'd1, Q_STEP = 3'd2, Q_WRITE = 3'd3,\n                         Q_SCAN = 3'd4, Q_DONE = 3'd5;\n",
    );
    s.push_str("  logic [2:0] q_state;\n");
    s.push_str("  int q_layer, q_oy, q_ox, q_oc, q_t0, q_t1, q_t2, q_scan;\n");
    if config.io.input == InputIface::Stream {
        s.push_str("  int q_ld;\n");
    }
    let _ = writeln!(s, "  logic [{}:0] q_best_i;", addr_bits(out_len) - 1);
    let _ = writeln!(s, "  logic signed [{}:0] q_acc;", acc - 1);
    s.push_str("  logic signed [7:0] q_best, q_last, q_x, q_w, q_floor;\n");
    s.push_str("  logic q_ok, q_mac;\n");
    s.push_str("  int q_n0, q_n1, q_n2, q_ny, q_nx, q_nc;\n");
    // |x - zp| * |w| <= 255 * 128 fits any accumulator width >= 16.
    let _ = writeln!(s, "  logic signed [{}:0] q_prod;", acc - 1);
    s.push_str("  int q_izp;\n");
    let _ = writeln!(s, "  logic signed [{}:0] q_bias;", acc - 1);
    if has_mac {
        s.push_str("  int q_ozp, q_lo, q_hi, q_mult, q_shift;\n");
    }
    if has_window {
        s.push_str("  int q_iy, q_ix;\n");
    }
    if let Some(sb) = &config.io.sideband {
        let _ = writeln!(s, "  logic [{}:0] q_tag;", sb.width - 1);
    }
    s.push('\n');
    for m in &plan.memories {
        let _ = writeln!(
            s,
            "  logic signed [{}:0] q_{} [0:{}];",
            m.width - 1,
            m.name,
            m.depth - 1
        );
    }
    s.push_str("  initial begin\n");
    for m in plan.memories.iter().filter(|m| m.init.is_some()) {
        let _ = writeln!(s, "    $readmemh(\"{}.mem\", q_{});", m.name, m.name);
    }
    s.push_str("  end\n");
    s.push_str(REQUANT);

    // Constants and taps of the current layer.
    s.push_str("\n  always_comb begin\n");
    s.push_str("    q_n0 = 1; q_n1 = 1; q_n2 = 1; q_ny = 1; q_nx = 1; q_nc = 1;\n");
    let _ = writeln!(
        s,
        "    q_mac = 1'b0; q_floor = {}; q_izp = 0; q_bias = '0;",
        s8(-128)
    );
    s.push_str("    q_x = 8'sh00; q_w = 8'sh00; q_ok = 1'b0;\n");
    if has_mac {
        s.push_str("    q_ozp = 0; q_lo = -128; q_hi = 127; q_mult = 0; q_shift = 0;\n");
    }
    if has_window {
        s.push_str("    q_iy = 0; q_ix = 0;\n");
    }
    s.push_str("    case (q_layer)\n");
    let mut src_depth = in_len;
    for (i, l) in plan.layers.iter().enumerate() {
        s.push_str(&layer_branch(i, l, src_depth, acc));
        src_depth = l.out_len();
    }
    s.push_str("      default: ;\n    endcase\n");
    let _ = writeln!(s, "    q_prod = {acc}'((32'(q_x) - q_izp) * 32'(q_w));");
    let _ = writeln!(s, "    q_last = q_act{nl}[{}];", index(out_len, "q_scan"));
    s.push_str("  end\n\n");

    // Sequencer.
    let start_compute = "q_state <= Q_INIT; q_layer <= 0; q_oy <= 0; q_ox <= 0; q_oc <= 0;";
    let tag = |s: &mut String, cond: &str| {
        if let Some(sb) = &config.io.sideband {
            let _ = writeln!(s, "          if ({cond}) q_tag <= {}_in;", sb.name);
        }
    };
    let _ = writeln!(s, "  always_ff @(posedge {}) begin", p.clk);
    let _ = writeln!(s, "    if (!{}) begin", p.rst_n);
    s.push_str("      q_state <= Q_IDLE; q_layer <= 0; q_scan <= 0;\n");
    if config.io.input == InputIface::Stream {
        s.push_str("      q_ld <= 0;\n");
    }
    s.push_str("      q_oy <= 0; q_ox <= 0; q_oc <= 0; q_t0 <= 0; q_t1 <= 0; q_t2 <= 0;\n");
    let _ = writeln!(
        s,
        "      q_acc <= '0; q_best <= {}; q_best_i <= '0;",
        s8(-128)
    );
    if config.io.sideband.is_some() {
        s.push_str("      q_tag <= '0;\n");
    }
    s.push_str("    end else begin\n      case (q_state)\n        Q_IDLE: begin\n");
    let in_idx = index(in_len, "q_ld");
    match config.io.input {
        InputIface::Stream => {
            tag(&mut s, &format!("{} && q_ld == 0", p.in_valid));
            let _ = writeln!(s, "          if ({}) begin", p.in_valid);
            let _ = writeln!(s, "            q_act0[{in_idx}] <= {};", p.in_data);
            let _ = writeln!(
                s,
                "            if (q_ld == {}) begin q_ld <= 0; {start_compute} end",
                in_len - 1
            );
            s.push_str("            else q_ld <= q_ld + 1;\n          end\n");
        }
        InputIface::MemoryMapped => {
            tag(&mut s, &p.start);
            let _ = writeln!(
                s,
                "          if ({}) q_act0[{}] <= {};",
                p.in_we, p.in_addr, p.in_data
            );
            let _ = writeln!(s, "          if ({}) begin {start_compute} end", p.start);
        }
    }
    s.push_str("        end\n");
    let _ = writeln!(
        s,
        "        Q_INIT: begin\n          q_acc <= q_mac ? q_bias : {acc}'(q_floor);\n          q_t0 <= 0; q_t1 <= 0; q_t2 <= 0; q_state <= Q_STEP;\n        end"
    );
    let _ = writeln!(
        s,
        "        Q_STEP: begin\n          if (q_mac) q_acc <= q_acc + q_prod;\n          else if (q_ok && {acc}'(q_x) > q_acc) q_acc <= {acc}'(q_x);"
    );
    let taps = [("q_t2", "q_n2"), ("q_t1", "q_n1"), ("q_t0", "q_n0")];
    s.push_str(&odometer(&taps, "q_state <= Q_WRITE;", "          "));
    s.push_str(
        "        end
        Q_WRITE: begin
          // Requantized here, once per output, not in the always_comb datapath.
          case (q_layer)
",
    );
    for (i, l) in plan.layers.iter().enumerate() {
        let value = if l.is_mac() {
            "q_requant(32'(q_acc), q_mult, q_shift, q_ozp, q_lo, q_hi)"
        } else {
            "8'(q_acc)"
        };
        let _ = writeln!(
            s,
            "            {i}: q_act{}[{}] <= {value};",
            i + 1,
            index(l.out_len(), "(q_oy * q_nx + q_ox) * q_nc + q_oc")
        );
    }
    s.push_str("            default: ;\n          endcase\n          q_state <= Q_INIT;\n");
    let outputs = [("q_oc", "q_nc"), ("q_ox", "q_nx"), ("q_oy", "q_ny")];
    let next_layer = format!(
        "if (q_layer == {}) begin q_state <= Q_SCAN; q_scan <= 0; end\n{pad}else begin q_layer <= q_layer + 1; q_state <= Q_INIT; end",
        nl - 1,
        pad = " ".repeat(16)
    );
    s.push_str(&odometer(&outputs, &next_layer, "          "));
    let _ = writeln!(
        s,
        "        end
        Q_SCAN: begin
          if (q_scan == 0 || q_last > q_best) begin q_best <= q_last; q_best_i <= {}'(q_scan); end
          if (q_scan == {}) q_state <= Q_DONE;
          else q_scan <= q_scan + 1;
        end
        Q_DONE: q_state <= Q_IDLE;
        default: q_state <= Q_IDLE;
      endcase
    end
  end
",
        addr_bits(out_len),
        out_len - 1
    );

    // Outputs.
    let out_bits = addr_bits(out_len);
    let _ = writeln!(s, "  assign {} = (q_state == Q_IDLE);", p.in_ready);
    let _ = writeln!(s, "  assign {} = (q_state != Q_IDLE);", p.busy);
    let _ = writeln!(s, "  assign {} = (q_state == Q_DONE);", p.done);
    let _ = writeln!(s, "  assign {} = q_best_i;", p.out_class);
    if config.io.kind == OutputKind::Logits {
        match config.io.output {
            OutputIface::Stream => {
                let _ = writeln!(s, "  assign {} = (q_state == Q_SCAN);", p.out_valid);
                let _ = writeln!(s, "  assign {} = {out_bits}'(q_scan);", p.out_index);
                let _ = writeln!(s, "  assign {} = q_last;", p.out_data);
            }
            OutputIface::MemoryMapped => {
                let _ = writeln!(s, "  assign {} = q_act{nl}[{}];", p.out_data, p.out_index);
            }
        }
    }
    if let Some(sb) = &config.io.sideband {
        let _ = writeln!(s, "  assign {}_out = q_tag;", sb.name);
    }
    s.push_str("endmodule\n");
    s
}
