/* build.h: the parser's actions, turning collected pieces into IR. */
#ifndef RAF_BUILD_H
#define RAF_BUILD_H

#include "parser/parse_state.h"

raf_loc raf_loc_of(raf_parser *p, int line, int col);

void raf_build_begin_func(raf_parser *p, raf_span name);
void raf_build_param(raf_parser *p, raf_span name, raf_type *t,
                     const raf_attrs *attrs);
void raf_build_result(raf_parser *p, raf_type *t, const raf_attrs *attrs);
void raf_build_results_done(raf_parser *p);
void raf_build_end_func(raf_parser *p, const raf_attrs *attrs);

void raf_build_reset_stmt(raf_parser *p);
void raf_build_poison_stmt(raf_parser *p);
void raf_build_stmt_loc(raf_parser *p, raf_span file, raf_span line,
                        raf_span col);
void raf_build_lhs(raf_parser *p, raf_span name);
void raf_build_operand(raf_parser *p, raf_span name);
void raf_build_stmt_type(raf_parser *p, raf_type *t);
void raf_build_op(raf_parser *p, raf_span op, raf_loc loc,
                  const raf_attrs *attrs);
void raf_build_constant(raf_parser *p, raf_loc loc, raf_loc lit_loc,
                        const raf_attrs *attrs, raf_type *t);
void raf_build_call(raf_parser *p, raf_span callee, raf_loc loc,
                    const raf_attrs *attrs);
void raf_build_return(raf_parser *p, raf_loc loc);

raf_type *raf_build_type(raf_parser *p, raf_span dtype);
void raf_build_dim(raf_parser *p, raf_span n);

void raf_build_attrs_begin(raf_parser *p);
void raf_build_attr_push(raf_parser *p, const raf_attr *a);
raf_attrs raf_build_attrs_end(raf_parser *p);
raf_attr raf_build_flag(raf_parser *p, raf_span name);
void raf_build_attr_name(raf_parser *p, raf_attr *a, raf_span name);
raf_attr raf_build_int_attr(raf_parser *p, raf_span n);
raf_attr raf_build_float_attr(raf_parser *p, raf_span n);
raf_attr raf_build_string_attr(raf_parser *p, raf_span s);
raf_attr raf_build_bool_attr(bool b);
raf_attr raf_build_dtype_attr(raf_span s);
raf_attr raf_build_value_attr(raf_parser *p, raf_span name);
raf_attr raf_build_func_attr(raf_parser *p, raf_span name);
raf_attr raf_build_list_attr(raf_parser *p);

void raf_build_lit_scalar(raf_parser *p, raf_span n);
void raf_build_lit_open(raf_parser *p, raf_loc loc);
void raf_build_lit_close(raf_parser *p, raf_loc loc);

#endif
