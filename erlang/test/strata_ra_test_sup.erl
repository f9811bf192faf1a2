%% A supervisor holding one child spec, as Ra's ra_log_sup holds
%% ra_log_meta's (strata_ra_log_meta_SUITE:child_spec_as_ra_expects).
-module(strata_ra_test_sup).
-behaviour(supervisor).

-export([init/1]).

%% Ten restarts a minute: the suite kills the child ten times, and a restart
%% whose start failed (its open finding the killed store's LOCK still held)
%% would be an eleventh, which takes the supervisor down.
init(ChildSpec) ->
    {ok, {#{strategy => one_for_one, intensity => 10, period => 60}, [ChildSpec]}}.
