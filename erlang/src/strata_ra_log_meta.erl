%% strata_ra_log_meta: Ra's ra_log_meta API on strata's raftmeta store
%% (erlang/README.md has how a Ra system is configured to use it).
%%
%% Same calls, arities and semantics as ra_log_meta:
%%  - store/4 and delete/2 return ok at once (Ra casts them); store_sync/4 and
%%    delete_sync/2 return ok only once the change, and every change made
%%    before it, is fsynced (30 s timeout, as Ra's call: the NIF's thread
%%    answers a call not durable by then with a timeout, and the caller
%%    exits as from Ra's call; option sync_timeout_ms).
%%  - A current_term different from the stored one clears voted_for in the
%%    same atomic write (rabbitmq/ra#111), and the cleared vote persists.
%%  - voted_for is stored as Ra writes it: `undefined`, {Name, Node} or a
%%    legacy bare atom Name, and fetched back as atoms (a binary Name, which
%%    Ra's shu branch allows, comes back as an atom too).
%%  - fetch/3,4 never go through the owner process and never wait for a
%%    write in flight: they read the store's lock-free table through the
%%    store's handle. They see a stored value at once, before it is durable,
%%    as Ra's ETS rows do; `undefined` when no store runs.
%%
%% Where callers find the handle: in a protected ETS table named like the
%% process (Ra's own table name), which dies with the owner, and in a
%% persistent_term {strata_ra_log_meta, Name}, which the calls read (an ETS
%% lookup of the handle cost as much as Ra's whole fetch, and copies the
%% handle, whose reference count the callers then contend on; a
%% persistent_term:get costs a fifth of it). The owner puts it when it has
%% opened the store and erases it when it terminates; after a kill the
%% entry stays until the next owner replaces it, and calls through it answer
%% `closed` (the NIF checks that the owner is alive): fetch/3 returns
%% `undefined`, store/4 and delete/2 drop the change, store_sync/4 and
%% delete_sync/2 exit noproc, as with no store. stats/1 looks in the ETS
%% table. (A persistent_term's erase or replacement makes the runtime scan
%% every process once: it happens when a Ra system's store stops or
%% restarts, never per call.)
%%
%% The process, registered under the system's log_meta name, owns the store:
%% it opens it (migrating Ra's <data_dir>/meta.dets on the first start) and
%% closes it when it terminates; if it is killed, the NIF closes it. The
%% callers do not message it: they call the NIF directly, in their own
%% process, and store_sync waits in `receive` while a thread of the library
%% waits for the fsync. It exits, with a reason naming the error and the
%% data directory, when the store fail-stops (an fsync failed: nothing is
%% acknowledged any more) or runs out of capacity ({store_full, Dir, Msg},
%% {string_table_full, Dir, Msg}), as Ra's process would crash.
-module(strata_ra_log_meta).
-behaviour(gen_server).

-export([start_link/1,
         child_spec/1,
         stop/1,
         store/4,
         store_sync/4,
         delete/2,
         delete_sync/2,
         fetch/3,
         fetch/4,
         await/1,
         stats/1]).

-export([init/1,
         handle_call/3,
         handle_cast/2,
         handle_info/2,
         terminate/2]).

-include_lib("kernel/include/logger.hrl").

%% Ra's call timeout (await/1's; the sync calls' is the NIF's
%% sync_timeout_ms, 30 s too) and the shutdown budget its supervisor gives
%% the process (the seed PR's shutdown => 30_000).
-define(TIMEOUT, 30000).
-define(SHUTDOWN, 30000).
%% The ETS key of the store's handle (ids are binaries: no clash).
-define(HANDLE, '$strata_ra_log_meta_handle').
%% The key of this module's options in Ra's system config.
-define(OPTIONS, strata_ra_log_meta).
%% How often the owner checks that the store has not fail-stopped while
%% nobody called it (a failed periodic fsync of last_applied).
-define(HEALTH_CHECK_MS, 1000).

-type key() :: current_term | voted_for | last_applied.
-type value() :: non_neg_integer() | atom() | {atom() | binary(), atom()}.
-type reason() :: strata_ra_nif:reason().
-export_type([key/0, value/0, reason/0]).

-record(state, {name :: atom(),
                dir :: binary(),
                handle :: strata_ra_nif:handle(),
                health_check_ms :: pos_integer()}).

%% ---- supervision ----

%% Ra's system config: #{name := System, data_dir := Dir,
%% names := #{log_meta := Name}, ...}; the optional key strata_ra_log_meta
%% holds this module's options (README.md).
-spec start_link(map()) -> {ok, pid()} | {error, term()}.
start_link(#{names := #{log_meta := Name}} = Cfg) ->
    gen_server:start_link({local, Name}, ?MODULE, Cfg, []).

%% The child spec for Ra's log supervisor (id as Ra's ra_log_meta child).
-spec child_spec(map()) -> supervisor:child_spec().
child_spec(#{names := #{log_meta := _}} = Cfg) ->
    #{id => ra_log_meta,
      start => {?MODULE, start_link, [Cfg]},
      restart => permanent,
      shutdown => ?SHUTDOWN,
      type => worker,
      modules => [?MODULE]}.

%% Stops the process cleanly (everything pending fsynced, store closed).
-spec stop(atom()) -> ok.
stop(Name) ->
    gen_server:stop(Name, shutdown, infinity).

%% ---- ra_log_meta's API ----

-spec store(atom(), binary(), key(), value()) -> ok.
store(Name, UId, Key, Value) when is_atom(Name) ->
    case persistent_term:get({?MODULE, Name}, undefined) of
        undefined ->
            %% No store runs: dropped, as Ra's cast to a stopped process.
            ok;
        H ->
            case strata_ra_nif:store(H, UId, Key, to_nif(Key, Value)) of
                ok -> ok;
                {error, Reason} -> failed_cast(Name, H, Reason)
            end
    end.

-spec store_sync(atom(), binary(), key(), value()) -> ok | {error, reason()}.
store_sync(Name, UId, Key, Value) ->
    H = running_handle(Name, store_sync, [Name, UId, Key, Value]),
    Ref = make_ref(),
    case strata_ra_nif:store_sync(H, UId, Key, to_nif(Key, Value), Ref) of
        ok ->
            %% No `after`: the NIF's thread answers every call, with
            %% {error, timeout} once sync_timeout_ms passed (a timer here
            %% cost 5-6 % of the CPU with 10 000 callers).
            receive
                {Ref, ok} -> ok;
                {Ref, {error, timeout}} ->
                    exit({timeout, {?MODULE, store_sync, [Name, UId, Key, Value]}});
                {Ref, {error, Reason}} -> failed_call(Name, H, Reason)
            end;
        {error, closed} ->
            closed_call(Name, store_sync, [Name, UId, Key, Value]);
        {error, Reason} ->
            failed_call(Name, H, Reason)
    end.

-spec delete(atom(), binary()) -> ok.
delete(_Name, UId) when not is_binary(UId) ->
    %% Nothing is stored under it (ids are binaries); Ra's force delete
    %% may pass `undefined` for a server it does not know.
    ok;
delete(Name, UId) ->
    case persistent_term:get({?MODULE, Name}, undefined) of
        undefined ->
            ok;
        H ->
            case strata_ra_nif:erase(H, UId) of
                ok -> ok;
                {error, Reason} -> failed_cast(Name, H, Reason)
            end
    end.

-spec delete_sync(atom(), binary()) -> ok | {error, reason()}.
delete_sync(Name, UId) when not is_binary(UId) ->
    _ = handle_or_exit(Name, delete_sync, [Name, UId]),
    ok;
delete_sync(Name, UId) ->
    H = running_handle(Name, delete_sync, [Name, UId]),
    Ref = make_ref(),
    case strata_ra_nif:erase_sync(H, UId, Ref) of
        ok ->
            receive
                {Ref, ok} -> ok;
                {Ref, {error, timeout}} -> exit({timeout, {?MODULE, delete_sync, [Name, UId]}});
                {Ref, {error, Reason}} -> failed_call(Name, H, Reason)
            end;
        {error, closed} ->
            closed_call(Name, delete_sync, [Name, UId]);
        {error, Reason} ->
            failed_call(Name, H, Reason)
    end.

-spec fetch(atom(), binary(), key()) -> value() | undefined.
fetch(_Name, UId, Key)
  when not is_binary(UId),
       (Key =:= current_term orelse Key =:= voted_for orelse Key =:= last_applied) ->
    %% Nothing is stored under it, as Ra's ETS lookup of such a key.
    undefined;
fetch(Name, UId, Key)
  when Key =:= current_term; Key =:= voted_for; Key =:= last_applied ->
    case persistent_term:get({?MODULE, Name}, undefined) of
        undefined -> undefined;
        H -> from_nif(Key, strata_ra_nif:fetch(H, UId, Key))
    end.

-spec fetch(atom(), binary(), key(), T) -> value() | T.
fetch(Name, UId, Key, Default) ->
    case fetch(Name, UId, Key) of
        undefined -> Default;
        Value -> Value
    end.

%% Returns once the process has opened its store and answers.
-spec await(atom()) -> ok.
await(Name) ->
    gen_server:call(Name, ping, ?TIMEOUT).

%% The store's counters (c_src/strata_ra_nif.cpp, stats_nif): servers,
%% batches, fsyncs, group commit rounds, WAL and compactions, migration.
-spec stats(atom()) -> map() | {error, closed}.
stats(Name) ->
    strata_ra_nif:stats(handle_or_exit(Name, stats, [Name])).

%% ---- the owner process ----

init(#{name := System, data_dir := Dir0, names := #{log_meta := Name}} = Cfg) ->
    process_flag(trap_exit, true),
    %% The store_sync replies are sent from this process (send_replies/1):
    %% it must not wait behind the thousands of callers it answers.
    process_flag(priority, high),
    Dir = dir_binary(Dir0),
    Options0 = maps:get(?OPTIONS, Cfg, #{}),
    HealthMs = maps:get(health_check_interval_ms, Options0, ?HEALTH_CHECK_MS),
    Options = maps:remove(health_check_interval_ms, Options0),
    Tab = ets:new(Name, [named_table, protected, {read_concurrency, true}]),
    case is_integer(HealthMs) andalso HealthMs > 0 andalso strata_ra_nif:open(Dir, Options) of
        false ->
            {stop, {invalid_argument, Dir,
                    <<"option health_check_interval_ms: expected a positive integer">>}};
        {ok, H} ->
            true = ets:insert(Tab, {?HANDLE, H}),
            persistent_term:put({?MODULE, Name}, H),
            log_opened(System, Dir, strata_ra_nif:stats(H)),
            erlang:send_after(HealthMs, self(), health_check),
            {ok, #state{name = Name, dir = Dir, handle = H, health_check_ms = HealthMs}};
        {error, Reason} ->
            ?LOG_ERROR("strata_ra_log_meta: cannot open the metadata store of Ra system ~ts "
                       "in ~ts: ~p", [System, Dir, Reason]),
            {stop, Reason}
    end.

handle_call(ping, _From, State) ->
    {reply, ok, State};
handle_call(Request, _From, State) ->
    {reply, {error, {unknown_call, Request}}, State}.

%% A caller met an error this process's store must not outlive. (One about
%% an earlier process's store, arriving late, is not about this one.)
handle_cast({fatal, H, Reason}, #state{handle = H, dir = Dir} = State) ->
    ?LOG_ERROR("strata_ra_log_meta: the metadata store in ~ts stops: ~p", [Dir, Reason]),
    {stop, Reason, State};
handle_cast(_Msg, State) ->
    {noreply, State}.

handle_info(strata_ra_replies, #state{handle = H} = State) ->
    send_replies(H),
    {noreply, State};
handle_info(health_check, #state{handle = H, dir = Dir, health_check_ms = Ms} = State) ->
    case strata_ra_nif:stats(H) of
        #{fail_stopped := true, fail_stop_reason := Why} ->
            Reason = {fail_stopped, Dir, Why},
            ?LOG_ERROR("strata_ra_log_meta: the metadata store in ~ts stops: ~p", [Dir, Reason]),
            {stop, Reason, State};
        _ ->
            erlang:send_after(Ms, self(), health_check),
            {noreply, State}
    end;
handle_info(_Info, State) ->
    {noreply, State}.

terminate(Reason, #state{name = Name, dir = Dir, handle = H}) ->
    %% Callers stop finding the handle first; those holding it get
    %% {error, closed} from here on.
    _ = persistent_term:erase({?MODULE, Name}),
    ets:delete(Name),
    case strata_ra_nif:close(H) of
        ok ->
            ?LOG_DEBUG("strata_ra_log_meta: closed the metadata store in ~ts (~p)",
                       [Dir, Reason]);
        {error, Why} ->
            ?LOG_WARNING("strata_ra_log_meta: closing the metadata store in ~ts: ~p",
                         [Dir, Why])
    end,
    ok.

%% ---- internal ----

%% The store_sync replies the NIF has decided, sent from this process (a
%% message sent by a process is built on the receiver's heap; one sent by
%% the NIF's thread is a heap fragment to collect). If this process cannot
%% (suspended, busy), the NIF's thread sends them after 20 ms.
send_replies(H) ->
    case strata_ra_nif:send_replies(H) of
        more -> send_replies(H);
        done -> ok
    end.

handle(Name) ->
    try
        ets:lookup_element(Name, ?HANDLE, 2)
    catch
        error:badarg -> undefined
    end.

%% As a call to a process that is not running.
handle_or_exit(Name, Fun, Args) ->
    case handle(Name) of
        undefined -> exit({noproc, {?MODULE, Fun, Args}});
        H -> H
    end.

%% store_sync/4, delete_sync/2: the handle from the persistent_term (an ETS
%% lookup of it copies the handle, whose reference count every caller then
%% updates: measurable with hundreds of callers on two schedulers). A killed
%% owner's handle is still there: its calls answer closed (closed_call/3).
running_handle(Name, Fun, Args) ->
    case persistent_term:get({?MODULE, Name}, undefined) of
        undefined -> exit({noproc, {?MODULE, Fun, Args}});
        H -> H
    end.

%% The NIF answered closed at once: with no owner running (killed, its
%% handle left in the persistent_term), as a call to a process that is not
%% there; with one (it is stopping, or has just replaced a killed one),
%% {error, closed}.
closed_call(Name, Fun, Args) ->
    case whereis(Name) of
        undefined -> exit({noproc, {?MODULE, Fun, Args}});
        _ -> {error, closed}
    end.

%% store/4, delete/2: the error of a cast. One the store (handle H) must
%% not outlive stops its owner; a value the store refuses (an id or name
%% too long) raises in the caller, whose value it is.
failed_cast(_Name, _H, closed) ->
    ok;
failed_cast(Name, H, Reason) ->
    case is_fatal(Reason) of
        true -> gen_server:cast(Name, {fatal, H, Reason});
        false -> erlang:error(Reason)
    end.

%% store_sync/4, delete_sync/2: the caller gets the error (never ok), and
%% the owner stops if the store must not go on.
failed_call(Name, H, Reason) ->
    case is_fatal(Reason) of
        true -> gen_server:cast(Name, {fatal, H, Reason});
        false -> ok
    end,
    {error, Reason}.

is_fatal({Code, _Dir, _Msg}) ->
    lists:member(Code, [fail_stopped, store_full, string_table_full]);
is_fatal(_) ->
    false.

to_nif(voted_for, undefined) ->
    undefined;
to_nif(voted_for, Name) when is_atom(Name) ->
    atom_to_binary(Name, utf8);
to_nif(voted_for, {Name, Node}) when is_atom(Node) ->
    {name_binary(Name), atom_to_binary(Node, utf8)};
to_nif(_Key, Value) ->
    Value.

name_binary(Name) when is_atom(Name) -> atom_to_binary(Name, utf8);
name_binary(Name) -> Name.

%% The NIF answers a vote with atoms (made once per vote, c_src/vote_atoms.h);
%% with binaries only when their text makes no atom, which binary_to_atom/2
%% then reports as it always did.
from_nif(_Key, {error, closed}) ->
    undefined;
from_nif(voted_for, Name) when is_binary(Name) ->
    binary_to_atom(Name, utf8);
from_nif(voted_for, {Name, Node}) when is_binary(Name) ->
    {binary_to_atom(Name, utf8), binary_to_atom(Node, utf8)};
from_nif(_Key, Value) ->
    Value.

dir_binary(Dir) ->
    case unicode:characters_to_binary(filename:absname(Dir)) of
        Bin when is_binary(Bin) -> Bin;
        _ -> erlang:error({bad_data_dir, Dir})
    end.

log_opened(System, Dir, #{servers := Servers, migration := Migration}) ->
    case Migration of
        #{action := migrated, rows := Rows, source := Source} ->
            ?LOG_NOTICE("strata_ra_log_meta: migrated ~b record(s) of Ra system ~ts from ~ts",
                        [Rows, System, Source]);
        #{action := retired_only, source := Source} ->
            ?LOG_NOTICE("strata_ra_log_meta: ~ts was already migrated (Ra system ~ts); "
                        "renamed it to .migrated", [Source, System]);
        _ ->
            ok
    end,
    ?LOG_INFO("strata_ra_log_meta: meta data store initialised for system ~ts in ~ts. "
              "~b record(s) recovered", [System, Dir, Servers]).
