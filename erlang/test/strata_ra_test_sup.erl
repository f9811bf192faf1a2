%% A supervisor holding one child spec, as Ra's ra_log_sup holds
%% ra_log_meta's (strata_ra_log_meta_SUITE:child_spec_as_ra_expects).
-module(strata_ra_test_sup).
-behaviour(supervisor).

-export([init/1]).

init(ChildSpec) ->
    {ok, {#{strategy => one_for_one, intensity => 5, period => 5}, [ChildSpec]}}.
