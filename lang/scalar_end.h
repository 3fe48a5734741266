/* scalar_end.h: undefines the words and rows of lang/scalar.def, so that
 * a file that expanded the table may use X, ADD or EXP for other things
 * after it. Include it after the table's last expansion. */
#undef UNARY
#undef BINARY
#undef COMPARE
#undef TEST
#undef BACKWARD
#undef NO_FORMULA
#undef X
#undef Y
#undef DY
#undef K
#undef NEG
#undef ADD
#undef SUB
#undef MUL
#undef DIV
#undef FABS
#undef SQRT
#undef EXP
#undef LOG
#undef TANH
#undef ERF
#undef COS
#undef SIN
#undef POW
#undef LT
#undef LE
#undef GT
#undef GE
#undef EQ
#undef NE
#undef UNORDERED
#undef SELECT
#undef IF_TANH
#undef RAF_SCALAR_MATH /* lang/scalar_c.h's helper, when it was included */
