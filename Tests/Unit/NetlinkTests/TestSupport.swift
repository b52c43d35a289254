// The fake transport and reply encoders live in the NetlinkTesting target, shared with the tests of the
// layers above; every test file of this target sees them.
@_exported import NetlinkTesting
