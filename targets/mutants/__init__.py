"""The bug zoo: one documented mutant of the unified target per bug class of spec section 9."""
