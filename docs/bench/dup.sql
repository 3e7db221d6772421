SELECT outcome FROM idempo.claim('bench', 'dup', '{"amount":1250,"currency":"EUR","to":"acct-0"}', 'd9ea6e96dd36079d74849c38421cec9eb9e3d8eae120e6f6c894510c99c7ad77', 'bench');
