/**
 * A Swagger UI plugin, run in the reader's browser: the JSON body of a "Try it out" answer shown with
 * every number exactly as the server sent it. Swagger UI re-formats that body with JSON.parse and
 * JSON.stringify, which rounds integers past 2^53 (9007199254740993 is shown as 9007199254740992,
 * swagger-ui issue #2030); lossless-json (loaded before it, as the global LosslessJSON) keeps the
 * digits. Everything else (other content types, unparsable bodies) is left to Swagger UI.
 */
export const EXACT_INTEGERS_JS = `(function () {
  'use strict'
  function exactJson (text) {
    try {
      return LosslessJSON.stringify(LosslessJSON.parse(text), null, '  ')
    } catch (e) {
      return null
    }
  }
  window.PetstoreDocs = {
    exactIntegers: function () {
      return {
        wrapComponents: {
          responseBody: function (Original, system) {
            return function ExactResponseBody (props) {
              var React = system.React
              var json = typeof props.content === 'string' && /json/i.test(props.contentType || '')
              var pretty = json ? exactJson(props.content) : null
              if (pretty === null) return React.createElement(Original, props)
              var HighlightCode = props.getComponent('HighlightCode', true)
              return React.createElement('div', null,
                React.createElement('h5', null, 'Response body'),
                React.createElement(HighlightCode, { language: 'json', downloadable: true, fileName: 'response.json', canCopy: true }, pretty))
            }
          }
        }
      }
    }
  }
})()
`
