int lc_cspawn_placeholder(void) { return 0; }
