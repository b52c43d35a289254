#ifndef LINKCOND_CSPAWN_H
#define LINKCOND_CSPAWN_H
int lc_cspawn_placeholder(void);
#endif
